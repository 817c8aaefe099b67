"""The groups of settings: each setting declared once, in the group of the layer that reads it; the dashboard's
sections, the command line's and the validation derived from them."""

from __future__ import annotations

import dataclasses

import pytest

from evocov_core.compute.settings import EVERY_ALGORITHM, GROWS_TREES, Rule
from evocov_core.searches.config import GROUPS, ConfigError, SearchConfig, settings
from evocov_core.searches.settings import ALGORITHMS


def test_every_setting_is_in_one_group_and_the_groups_are_the_sections():
    fields = settings()
    names = [f.name for f in fields]
    assert len(names) == len(set(names)) == len(dataclasses.fields(SearchConfig))
    assert {f.setting.group for f in fields} == set(GROUPS)  # every group has settings, every setting a group
    assert [f.name for f in fields] == [f.name for f in dataclasses.fields(SearchConfig)]  # the order of the groups
    assert list(GROUPS)[:3] == ["algorithm", "budget", "evolution"]


def test_the_algorithms_a_setting_names_are_the_search_algorithms():
    assert set(ALGORITHMS) == EVERY_ALGORITHM and GROWS_TREES < EVERY_ALGORITHM
    for f in settings():
        assert f.setting.used_by <= EVERY_ALGORITHM, f.name


def test_a_rule_offers_its_enum_values_and_a_string_becomes_its_member():
    rules = [f for f in dataclasses.fields(SearchConfig) if isinstance(f.default, Rule)]
    assert {f.name for f in rules} >= {"algorithm", "metric", "method", "init", "priors", "choice", "calibration"}
    for f in rules:
        assert f.metadata["setting"].choices == type(f.default).values(), f.name
    cfg = SearchConfig(choice="origins", metric="loocv")
    assert cfg.choice is type(SearchConfig().choice).ORIGINS and cfg.metric == "loocv"
    with pytest.raises(ConfigError, match="choice must be one of"):
        SearchConfig(choice="nonsense")

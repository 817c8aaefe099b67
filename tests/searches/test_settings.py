"""The groups of settings: each setting declared once, in the group of the layer that reads it; the dashboard's
sections, the command line's and the validation derived from them."""

from __future__ import annotations

import dataclasses

import pytest

from evocov_core.compute.settings import EVERY_ALGORITHM, GROWS_TREES, Rule
from evocov_core.language.grammar import FAMILIES, get_grammar
from evocov_core.searches.config import GROUPS, ConfigError, SearchConfig, current_settings, settings
from evocov_core.searches.presets import preset
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


def test_the_families_are_the_tables_and_an_unknown_one_is_refused():
    """The families a search may name are those the operations' records name, kept in the table's order."""
    meta = {f.name: f.setting for f in settings()}["families"]
    assert meta.choices == FAMILIES and {"changepoint", "changewindow", "statespace"} <= set(FAMILIES)
    assert SearchConfig(families=("statespace", "changepoint")).families == ("changepoint", "statespace")
    with pytest.raises(ConfigError, match="families must be a subset of"):
        SearchConfig(families=("cosines",))
    with pytest.raises(ConfigError, match="families must be a tuple"):
        SearchConfig(families="changepoint")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown family 'cosines'"):
        get_grammar(20, families=("cosines",))
    with pytest.raises(ValueError, match="not the string"):
        get_grammar(20, families="statespace")


def test_settings_stored_with_one_boolean_per_family_still_load():
    """Runs, kernel files' run records and JSON configs of earlier versions named each family by a boolean."""
    old = {k: v for k, v in preset("quick").to_dict().items() if k != "families"}
    cfg = SearchConfig.from_dict({**old, "changepoints": True, "changewindows": False, "statespace": True})
    assert cfg == preset("quick", families=("changepoint", "statespace"))
    paper = {k: v for k, v in SearchConfig().to_dict().items() if k != "families"}
    assert SearchConfig.from_dict({**paper, "changepoints": False, "changewindows": False}) == SearchConfig()
    assert current_settings({"families": ["changepoint"], "changepoints": False}) == {"families": []}
    assert current_settings({"mu": 3, "families": ["statespace"]}) == {"mu": 3, "families": ["statespace"]}
    with pytest.raises(ConfigError, match="changepoints must be true or false"):
        SearchConfig.from_dict({"changepoints": "yes"})

"""What a setting is: a dataclass field that carries its label, help, bounds and choices.

Each layer declares the settings it reads as a frozen dataclass of its own, a *group*
(:class:`~evocov_core.fitting.settings.FittingSettings`, :class:`~evocov_core.language.settings.TreeSettings`...),
whose ``TITLE`` names it; :class:`~evocov_core.searches.config.SearchConfig` composes the groups. The command
line's options, the dashboard's widgets and sections, and the validation of every value are derived
from these fields, so a setting is written once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from enum import Enum
from typing import Any, NamedTuple

__all__ = ["EVERY_ALGORITHM", "GROWS_TREES", "Rule", "Setting", "SettingField", "group_fields", "setting"]

#: The search algorithms, by name (``used_by`` of a setting read by all of them).
EVERY_ALGORITHM = frozenset({"evocov", "random", "gwtf", "gpss"})
#: The algorithms that grow random trees (and so read the tree-generation settings).
GROWS_TREES = frozenset({"evocov", "random", "gwtf"})


class Rule(str, Enum):
    """A setting that names a rule. A member equals, hashes and prints as its value (``"origins"``), so that
    files, the command line and the run store keep plain strings; a setting given as a string is turned
    into its member when the settings are made, and an unknown one is refused."""

    __hash__ = str.__hash__

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, spec: str) -> str:
        return str.__format__(self.value, spec)

    @classmethod
    def values(cls) -> tuple[str, ...]:
        return tuple(m.value for m in cls)


@dataclass(frozen=True)
class Setting:
    """What one setting means to a person: the single source of the CLI option, the dashboard's widget and
    the per-field validation.

    Attributes
    ----------
    label, help : str
        Widget label and help text (the CLI's help too).
    used_by : frozenset of str
        The algorithms that read the setting (the dashboard disables it for the others).
    lo, hi : float, optional
        Inclusive bounds (validation, widget limits, CLI help).
    step : float, optional
        Widget step.
    fmt : str, optional
        Widget number format.
    choices : tuple of str, optional
        Allowed values (a subset of them for a tuple setting); a rule's are its enum's values.
    labels : dict, optional
        Per-algorithm labels (``population`` means N kernels drawn for Random Search).
    derived_from : str, optional
        Set by the dashboard from another setting (``p_crossover = 1 − p_mutation``).
    group : str
        The key of the group that declares it (set by :func:`group_fields`).
    """

    label: str
    help: str
    used_by: frozenset[str] = EVERY_ALGORITHM
    lo: float | None = None
    hi: float | None = None
    step: float | None = None
    fmt: str | None = None
    choices: tuple[str, ...] | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    derived_from: str | None = None
    group: str = ""

    def label_for(self, algorithm: str) -> str:
        return self.labels.get(algorithm, self.label)

    @property
    def range_text(self) -> str:
        """The bounds in words: ``in [1, 100000]``, ``at least 0``."""
        def num(v: float) -> str:
            return str(int(v)) if float(v).is_integer() else f"{v:g}"

        if self.lo is not None and self.hi is not None:
            return f"in [{num(self.lo)}, {num(self.hi)}]"
        return f"at least {num(self.lo)}" if self.lo is not None else f"at most {num(self.hi)}"


def setting(default: Any, label: str, help: str, used_by: frozenset[str] = EVERY_ALGORITHM, **kw: Any) -> Any:
    """A dataclass field carrying its :class:`Setting`; a :class:`Rule` default offers its enum's values."""
    if isinstance(default, Rule) and "choices" not in kw:
        kw["choices"] = type(default).values()
    return field(default=default, metadata={"setting": Setting(label, help, used_by, **kw)})


class SettingField(NamedTuple):
    """One setting and what it means (a tuple: ``for name, kind, meta in settings()``).

    Attributes
    ----------
    name : str
        The field's name.
    kind : type
        ``int``, ``float``, ``bool``, ``str`` (a rule is one of its values) or ``tuple`` (of str).
    setting : Setting
        Its label, help, group, bounds and choices.
    """

    name: str
    kind: type
    setting: Setting


def _kind(default: Any) -> type:
    if isinstance(default, (Rule, str)):
        return str
    if isinstance(default, tuple):
        return tuple
    return type(default)  # bool, int or float


def group_fields(groups: tuple[type, ...]) -> tuple[SettingField, ...]:
    """The settings of ``groups`` (dataclasses, each with a ``KEY``), in declaration order, each marked with
    the key of the group that declares it."""
    out: list[SettingField] = []
    for cls in groups:
        own = cls.__dict__.get("__dataclass_fields__", {})
        for f in fields(cls):
            if f.name in own and "setting" in f.metadata:
                out.append(SettingField(f.name, _kind(f.default), replace(f.metadata["setting"], group=cls.KEY)))
    return tuple(out)

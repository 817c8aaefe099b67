"""The command line's shared pieces: its one-line error, and the options every search-running command takes.

:mod:`evocov_core.present.cli` (every command) and :mod:`evocov_core.present.cli_panel` (``panel``) build their
parsers from these, so that a search setting is one option with one help text wherever it is offered.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["CliError", "add_exec_args", "add_setting_args", "int_in", "setting_overrides"]


class CliError(Exception):
    """A user error to print as one line."""


def int_in(lo: int, hi: int, what: str) -> Callable[[str], int]:
    """An argparse type: a whole number from ``lo`` to ``hi``."""
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} takes a whole number, got {text!r}") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{what} takes {lo} to {hi}, got {v}")
        return v

    return parse


def add_setting_args(p: argparse.ArgumentParser, skip: tuple[str, ...] = ()) -> None:
    """One option per :class:`SearchConfig` setting, from its metadata (``--d-max``, ``--families``...), in
    one section of the help per group of settings, but those named in ``skip`` (a command that sets them from
    an option of its own)."""
    from evocov_core.searches.config import GROUPS, settings

    sections = {key: p.add_argument_group(f"search settings: {title.lower()}") for key, title in GROUPS.items()}
    for name, typ, meta in settings():
        if name == "algorithm" or name in skip:
            continue  # its own option, with the preset
        section = sections[meta.group]
        flag = "--" + name.replace("_", "-")
        text = meta.help + ("" if meta.lo is None and meta.hi is None else f" ({meta.range_text})")
        text = text.replace("%", "%%")
        if typ is bool:
            section.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction, default=None, help=text)
        elif typ is tuple:
            # The option alone names none (no family, no classical member).
            section.add_argument(flag, dest=name, nargs="*", choices=meta.choices,
                                 help=text + f" Names separated by spaces; {flag} alone names none.")
        elif meta.choices is not None:
            # Accept the spelling with hyphens too (posterior-lml).
            shown = [c.replace("_", "-") for c in meta.choices]
            section.add_argument(flag, dest=name, type=lambda v: v.replace("-", "_"), choices=meta.choices,
                                 metavar="{" + ",".join(shown) + "}", help=text)
        else:
            section.add_argument(flag, dest=name, type=typ, metavar="SECONDS" if name == "time_budget" else None,
                                 help=text)


def setting_overrides(args: argparse.Namespace) -> dict[str, object]:
    """The search settings given on the command line (every option of :func:`add_setting_args` that was set),
    tuples for the options that take several values; ``algorithm`` has its own option and is left out."""
    from evocov_core.searches.config import settings

    out: dict[str, object] = {}
    for name, _, _ in settings():
        v = getattr(args, name, None)
        if v is not None and name != "algorithm":
            out[name] = tuple(v) if isinstance(v, list) else v
    return out


def add_exec_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=int_in(1, 1024, "--workers"), default=None,
                   help="worker processes, 1 to 1024 (default: one per core; 1 = serial)")
    p.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://host:8786")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quiet", action="store_true", help="no progress lines")

"""Rename variants in a ``bench accuracy`` folder after a preset changed.

When a preset adopts what was a variant (say ``cp-by-expansion`` becomes what ``standard``
runs), the trials already run keep their meaning but not their names: the old ``full``
is now a variant with one part turned off, the old variant is now ``full``. This script
renames them in one pass (a mapping, so ``full -> no-changepoints`` and
``cp-by-expansion -> full`` can be applied together) in

* ``trials.csv``: the ``variant`` and ``kernel_file`` columns;
* ``kernels/``: the file names and each file's ``scores.variant``;
* ``run.json``: each invocation's ``variants`` and ``settings`` keys. The recorded
  ``command`` is left as it was typed, and a ``relabelled`` entry says what was renamed and
  when, so that the report can show both.

The settings recorded for each renamed variant must equal what the new name runs today
(:func:`bench.accuracy.variant_config`); otherwise nothing is written and the
script says which settings differ. Usage, from the repository root::

    python bench/relabel_accuracy.py bench/results/accuracy/standard \\
        full=no-changepoints with-changepoints=cp-everywhere cp-by-expansion=full
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path

from bench.accuracy import VARIANTS, kernel_path, settings_differences, variant_config
from bench.common import now_iso, write_json, write_text_atomic
from evocov_core.runs.kernel_file import dump_kernel_file


def relabel(out: Path, mapping: dict[str, str]) -> list[str]:
    """Rename the variants of ``out`` by ``mapping``; returns what was done, a line each."""
    unknown = sorted(set(mapping.values()) - set(VARIANTS))
    if unknown:
        raise SystemExit(f"not variants today: {', '.join(unknown)}")
    lines = (out / "trials.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    columns = next(csv.reader(lines[:1]))
    runs = json.loads((out / "run.json").read_text())
    present = {next(csv.reader([line]))[columns.index("variant")] for line in lines[1:] if line.strip()}
    clash = sorted(new for new in mapping.values() if new in present and new not in mapping)
    if clash:
        raise SystemExit(f"the folder already has trials of {', '.join(clash)}, which are not renamed away; "
                         "nothing was changed")
    # Every renamed variant's recorded settings must be what its new name runs now.
    for run in runs["runs"]:
        for old, cfg in run.get("settings", {}).items():
            if old in mapping:
                # The rule `bench accuracy` applies when it resumes a folder.
                diff = settings_differences(cfg, variant_config(mapping[old], run["budget"],
                                                                run.get("time_budget_override")).to_dict())
                if diff:
                    raise SystemExit(f"{old} -> {mapping[old]}: the recorded settings are not what {mapping[old]} "
                                     f"runs today (differing: {', '.join(diff)}); nothing was changed")
    done, renames, counts = [], set(), dict.fromkeys(mapping, 0)
    col = {c: i for i, c in enumerate(columns)}
    for i, line in enumerate(lines[1:], start=1):
        # Only the rows renamed are written again; every other byte stays as it was.
        body = line.rstrip("\r\n")
        cells = next(csv.reader([body]))
        old = cells[col["variant"]]
        if old not in mapping:
            continue
        series, seed = cells[col["series"]], int(cells[col["seed"]])
        renames.add((series, old, seed))
        counts[old] += 1
        cells[col["variant"]] = mapping[old]
        if cells[col["kernel_file"]]:
            cells[col["kernel_file"]] = kernel_path(series, mapping[old], seed)
        text = io.StringIO()
        csv.writer(text, lineterminator="").writerow(cells)
        lines[i] = text.getvalue() + line[len(body):]
    done += [f"{old} -> {new}: {counts[old]} rows" for old, new in mapping.items()]
    # Two passes through temporary names, so that a chain of renames never overwrites a file.
    moved = []
    for series, old, seed in sorted(renames):
        src = out / kernel_path(series, old, seed)
        if src.exists():
            tmp = src.with_suffix(".relabel")
            src.rename(tmp)
            moved.append((tmp, out / kernel_path(series, mapping[old], seed)))
    for tmp, dst in moved:
        doc = json.loads(tmp.read_text())
        doc.get("scores", {})["variant"] = dst.name.split("__")[1]
        write_text_atomic(dst, dump_kernel_file(doc))
        tmp.unlink()
    stamp = (f"Variants renamed on {now_iso()} after the preset changed "
             f"({', '.join(f'{a} -> {b}' for a, b in mapping.items())}); the command above is as it was typed.")
    for run in runs["runs"]:
        if any(v in mapping for v in run.get("variants", [])):
            run["variants"] = [mapping.get(v, v) for v in run["variants"]]
            run["settings"] = {mapping.get(k, k): v for k, v in run.get("settings", {}).items()}
            notes = run.get("relabelled", [])  # an older record holds one note as text
            run["relabelled"] = [*([notes] if isinstance(notes, str) else notes), stamp]
    write_text_atomic(out / "trials.csv", "".join(lines))
    write_json(out / "run.json", runs)
    return [*done, f"{len(moved)} kernel files renamed"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="the bench accuracy folder")
    ap.add_argument("renames", nargs="+", help="old=new")
    args = ap.parse_args(argv)
    mapping = dict(r.split("=", 1) for r in args.renames)
    for line in relabel(args.out, mapping):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

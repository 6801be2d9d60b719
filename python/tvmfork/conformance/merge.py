"""`tvmfork conformance merge REPORT...`: the shards of one run (`--shard K/N`, e.g. on the
machines of a CI matrix) joined into one report, in the whole run's case order, gated as the
whole run is. Shards that overlap, are missing, or come from different runs (other wheels,
another configuration, another case count) are refused, naming what differs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tvmfork.conformance import report
from tvmfork.conformance.runner import Result
from tvmfork.errors import UsageError


def _shard(folder: Path) -> tuple[report.Header, list[Result]]:
    jsonl = folder / "results.jsonl"
    header = report.load_header(folder)
    if header is None or not jsonl.is_file():
        raise UsageError(
            f"{folder}: not a conformance report folder (no {report.HEADER} or results.jsonl)"
        )
    if not header.shard:
        raise UsageError(f"{folder}: a whole run, not a shard (it was run without --shard)")
    return header, report.load(jsonl)


def _same_run(a: report.Header, b: report.Header, folder: Path) -> None:
    wheels = {s: d.get("sha256") for s, d in a.sides.items()}
    theirs = {s: d.get("sha256") for s, d in b.sides.items()}
    for what, mine, other in (
        ("wheels", wheels, theirs),
        ("run configuration", a.config, b.config),
        ("case count", a.cases, b.cases),
        ("shard count", a.shard.split("/")[1], b.shard.split("/")[1]),
    ):
        if mine != other:
            raise UsageError(f"{folder}: a shard of another run ({what}: {other} here, {mine})")


def merge(folders: list[Path]) -> tuple[report.Header, list[Result]]:
    """The header and the results of the whole run the shards in `folders` make up."""
    shards = [(f, *_shard(f)) for f in folders]
    first = shards[0][1]
    count = int(first.shard.split("/")[1])
    by_index: dict[int, tuple[Path, list[Result]]] = {}
    for folder, header, results in shards:
        _same_run(first, header, folder)
        k = int(header.shard.split("/")[0])
        if k in by_index:
            raise UsageError(f"shard {k}/{count} given twice: {by_index[k][0]} and {folder}")
        by_index[k] = (folder, results)
    missing = sorted(set(range(1, count + 1)) - set(by_index))
    if missing:
        raise UsageError(
            f"shard(s) {', '.join(f'{k}/{count}' for k in missing)} missing: a merge needs "
            "every shard of the run"
        )
    # each shard's cases in its order; case i of the whole run is case i // N of shard i % N + 1
    grouped: dict[int, dict[tuple[str, str], list[Result]]] = {}
    for k, (_, results) in by_index.items():
        grouped[k] = {}
        for r in results:
            grouped[k].setdefault((r.suite, r.case), []).append(r)
    cases = {k: list(g) for k, g in grouped.items()}
    seen: dict[tuple[str, str], int] = {}
    for k, keys in sorted(cases.items()):
        for key in keys:
            if key in seen:
                raise UsageError(f"case {key[0]}/{key[1]} is in shards {seen[key]} and {k}")
            seen[key] = k
    if len(seen) != first.cases:
        raise UsageError(f"the shards hold {len(seen)} cases; the run had {first.cases}")
    merged: list[Result] = []
    for i in range(first.cases):
        k = i % count + 1
        merged += grouped[k][cases[k][i // count]]
    whole = dataclasses.replace(first, shard="")
    return whole, merged

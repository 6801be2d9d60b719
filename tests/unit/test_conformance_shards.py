"""A run split with --shard K/N and joined by `conformance merge`: each case in exactly one
shard, the merge in the whole run's order, and shards that overlap, are missing or come from
another run refused (fake reports, no TVM)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tvmfork.conformance import merge, report
from tvmfork.conformance.options import Shard
from tvmfork.conformance.runner import Result
from tvmfork.errors import UsageError

pytestmark = pytest.mark.unit

CASES = [f"c{i}" for i in range(7)]
SIDES = {"stock": {"tvm": "0.26.0", "wheel": "s.whl", "sha256": "aa"}}


def _results(names: list[str]) -> list[Result]:
    return [
        Result("s", n, side, "ok" if (side == "fork" or int(n[1:]) % 2) else "error", "ok")
        for n in names
        for side in ("stock", "fork")
    ]


def _write(folder: Path, shard: Shard, total: int = len(CASES), **header: object) -> Path:
    names = [CASES[i] for i in shard.take(list(CASES))]
    fields = {"sides": SIDES, "context": "target llvm", "shard": str(shard), "cases": total}
    h = report.Header.from_json({**fields, **header})
    report.write(_results(names), folder, header=h)
    return folder


def test_shards_split_every_case_once() -> None:
    taken = [i for k in (1, 2, 3) for i in Shard(k, 3).take(list(CASES))]
    assert sorted(taken) == list(range(len(CASES)))
    assert Shard(1, 3).take(list(CASES)) == [0, 3, 6]
    assert str(Shard.parse("2/3")) == "2/3"
    for bad in ("0/3", "4/3", "3", "a/b", "1/0"):
        with pytest.raises(UsageError, match="give K/N"):
            Shard.parse(bad)


def test_the_merge_is_the_whole_run_in_its_order(tmp_path: Path) -> None:
    folders = [_write(tmp_path / str(k), Shard(k, 3)) for k in (3, 1, 2)]
    header, results = merge.merge(folders)
    assert [r.case for r in results if r.side == "stock"] == CASES
    whole = _results(CASES)
    assert [(r.case, r.side, r.status) for r in results] == [
        (r.case, r.side, r.status) for r in whole
    ]
    assert (header.shard, header.cases, header.sides) == ("", len(CASES), SIDES)


def test_missing_overlapping_and_foreign_shards_are_refused(tmp_path: Path) -> None:
    one, two, three = (_write(tmp_path / str(k), Shard(k, 3)) for k in (1, 2, 3))
    with pytest.raises(UsageError, match="shard\\(s\\) 3/3 missing"):
        merge.merge([one, two])
    with pytest.raises(UsageError, match="shard 2/3 given twice"):
        merge.merge([one, two, two, three])
    other = _write(tmp_path / "other", Shard(3, 3), sides={"stock": {"sha256": "bb"}})
    with pytest.raises(UsageError, match="a shard of another run \\(wheels"):
        merge.merge([one, two, other])
    fewer = _write(tmp_path / "fewer", Shard(3, 3), total=6)
    with pytest.raises(UsageError, match="case count"):
        merge.merge([one, two, fewer])
    whole = tmp_path / "whole"
    report.write(_results(CASES), whole, header=report.Header(sides=SIDES, cases=len(CASES)))
    with pytest.raises(UsageError, match="a whole run, not a shard"):
        merge.merge([whole])
    with pytest.raises(UsageError, match="not a conformance report folder"):
        merge.merge([tmp_path / "nothing"])

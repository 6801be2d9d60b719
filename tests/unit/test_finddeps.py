"""`verify --alone --find-deps`: the bisection that finds the earlier patches a patch needs
and does not name, with the test runs replaced by a rule over the overlay's patches."""

from __future__ import annotations

from pathlib import Path

import pytest

from tvmfork import finddeps
from tvmfork import series as seriesmod
from tvmfork.errors import PatchError
from tvmfork.verify import FAIL, PASS, Job, Outcome

from .conftest import write

pytestmark = pytest.mark.unit


def _series(tmp_path: Path, n: int, deps: dict[int, list[int]]) -> seriesmod.Series:
    patches = []
    for i in range(n):
        trailers = "".join(f"Depends-On: p{d}\n" for d in deps.get(i, []))
        path = write(
            tmp_path / f"p{i}.patch",
            f"From 0 Mon Sep 17 00:00:00 2001\nFrom: a <a@b>\nSubject: [PATCH] p{i}\n\n"
            f"Why.\n\n{trailers}Regression-Test: tests/regression/test_p{i}.py\n---\n"
            f"diff --git a/python/tvm/p{i}.py b/python/tvm/p{i}.py\n"
            f"--- a/python/tvm/p{i}.py\n+++ b/python/tvm/p{i}.py\n@@ -1 +1 @@\n-a\n+b\n",
        )
        patches.append(seriesmod.parse_patch(path))
    return seriesmod.Series(tmp_path, tuple(patches))


def _search(series: seriesmod.Series, index: int, needs: set[int]) -> finddeps.Search:
    """Drive one search with the rule: the patch's tests pass when every patch of `needs` is
    in the overlay."""
    s = finddeps.start(series, series.patches[index])
    while s.state in (finddeps.CHECK, finddeps.ALL, finddeps.BISECT):
        have = {n for n in s.trial()}
        s.step({f"p{i}.patch" for i in needs} <= have, series)
    return s


@pytest.mark.parametrize(
    ("needs", "found"),
    [
        (set(), []),  # complete: one run
        ({3}, ["p3.patch"]),
        ({0}, ["p0.patch"]),
        ({8}, ["p8.patch"]),
        ({2, 7}, ["p7.patch", "p2.patch"]),  # two missing: found last first
    ],
)
def test_bisection_finds_each_missing_patch(
    tmp_path: Path, needs: set[int], found: list[str]
) -> None:
    series = _series(tmp_path, 10, {})
    s = _search(series, 9, needs)
    assert s.state == finddeps.DONE and s.found == found
    assert s.runs <= 2 + len(found) * (2 + 4)  # log2(9) < 4 per missing patch


def test_a_found_patch_brings_its_own_depends_on(tmp_path: Path) -> None:
    """p6 names p1: once p6 is found the overlay holds p1 too, and p1 is not searched for."""
    series = _series(tmp_path, 10, {6: [1], 9: [4]})
    s = _search(series, 9, {1, 4, 6})
    assert s.state == finddeps.DONE and s.found == ["p6.patch"]
    assert [p.name for p in s.closure] == ["p1.patch", "p4.patch", "p6.patch"]


def test_no_earlier_patch_helps(tmp_path: Path) -> None:
    series = _series(tmp_path, 5, {})
    s = finddeps.start(series, series.patches[4])
    while s.state not in (finddeps.DONE, finddeps.NONE):
        s.step(False, series)
    assert s.state == finddeps.NONE and s.runs == 2 and not s.found
    assert "fails on every earlier patch too" in finddeps.describe([s])[0]


def test_run_searches_in_lockstep_and_an_overlay_that_does_not_apply_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    series = _series(tmp_path, 6, {})
    needs = {"p5.patch": {"p2.patch"}, "p4.patch": set()}
    batches: list[int] = []

    def overlay_tree(package: Path, wheel: Path, patches: list, cache: Path) -> Path:
        names = {p.name for p in patches}
        if "p3.patch" in names and "p0.patch" not in names:
            raise PatchError("p3 does not apply without p0")
        return Path("/".join(sorted(names)))

    def run_jobs(jobs: list[Job], *args: object, **kw: object) -> dict[str, Outcome]:
        assert args[-1] == 2  # slots
        batches.append(len(jobs))
        out = {}
        for j in jobs:
            have = set(j.pythonpath.split("/"))
            out[j.key] = Outcome(PASS if needs[j.key] <= have else FAIL)
        return out

    monkeypatch.setattr(finddeps, "overlay_tree", overlay_tree)
    monkeypatch.setattr(finddeps, "run_jobs", run_jobs)
    monkeypatch.setattr(finddeps, "stock_package", lambda python: tmp_path)
    wanted = [series.get("p4"), series.get("p5")]
    got = finddeps.run(series, wanted, tmp_path, tmp_path, tmp_path, tmp_path)
    assert [(s.patch.name, s.state, s.found) for s in got] == [
        ("p4.patch", finddeps.DONE, []),
        ("p5.patch", finddeps.DONE, ["p2.patch"]),
    ]
    assert batches[0] == 2 and all(b <= 2 for b in batches)
    # each finding is said as it is made (a run cut short keeps them in its log)
    said = capsys.readouterr()
    text = said.out + said.err
    assert "p5.patch: needs p2.patch" in text
    assert "p4.patch: needs nothing beyond its Depends-On" in text
    assert text.index("p4.patch: needs nothing") < text.index("p5.patch: needs p2.patch")

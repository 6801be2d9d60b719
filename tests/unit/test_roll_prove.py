"""`roll --prove`: verdicts from the textual roll and the tests on stock REV and the rolled
build, the rounds that drop absorbed patches, and the proving tree. The source builds and test
runs are replaced by stand-ins here; `docs/proofs/` holds a real proof."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tvmfork import roll, rollbuild, rollprove, upstream_tests
from tvmfork import series as seriesmod
from tvmfork.errors import PatchError, SourceError
from tvmfork.settings import Settings
from tvmfork.verify import CRASH, ERROR, FAIL, PASS, Outcome, Row

from .conftest import PY_FILE, Fork, git, write

pytestmark = pytest.mark.unit


def _row(stock: str | None, fork: str | None, reason: str = "") -> Row:
    return Row(
        "p.patch",
        ("tests/regression/test_p.py",),
        Outcome(stock) if stock else None,
        Outcome(fork) if fork else None,
        reason,
    )


@pytest.mark.parametrize(
    ("text", "stock", "fork", "upstream_bad", "verdict"),
    [
        (roll.CLEAN, FAIL, PASS, [], roll.CLEAN),
        (roll.THREE_WAY, CRASH, PASS, [], roll.THREE_WAY),
        (roll.CLEAN, PASS, PASS, [], rollprove.ABSORBED),  # upstream fixed it another way
        (roll.CONFLICT, PASS, None, [], rollprove.ABSORBED),
        (roll.UPSTREAM, None, None, [], rollprove.ABSORBED),
        (roll.CLEAN, FAIL, FAIL, [], rollprove.BROKEN),  # merged, and no longer works
        (roll.THREE_WAY, FAIL, ERROR, [], rollprove.BROKEN),
        (roll.CLEAN, FAIL, PASS, ["t::test_a"], rollprove.BROKEN),
        (roll.CONFLICT, FAIL, None, [], roll.CONFLICT),
        (roll.CLEAN, ERROR, PASS, [], rollprove.UNPROVEN),  # a missing name proves nothing
        (roll.CLEAN, None, None, [], rollprove.UNPROVEN),
    ],
)
def test_each_verdict(
    text: str, stock: str | None, fork: str | None, upstream_bad: list[str], verdict: str
) -> None:
    row = None if stock is None and text != roll.CLEAN else _row(stock, fork, "why")
    got, why = rollprove.decide(text, row, upstream_bad)
    assert got == verdict
    assert verdict in (roll.CLEAN, roll.THREE_WAY) or why


def _patch(tmp_path: Path, diff: str) -> seriesmod.Patch:
    path = write(
        tmp_path / "x.patch",
        "From 0 Mon Sep 17 00:00:00 2001\nFrom: a <a@b>\nSubject: [PATCH] x\n\nWhy.\n---\n" + diff,
    )
    return seriesmod.parse_patch(path)


def test_the_upstream_tests_a_patch_adds_or_changes(tmp_path: Path) -> None:
    patch = _patch(
        tmp_path,
        "diff --git a/tests/python/relax/test_frontend_onnx.py "
        "b/tests/python/relax/test_frontend_onnx.py\n"
        "--- a/tests/python/relax/test_frontend_onnx.py\n"
        "+++ b/tests/python/relax/test_frontend_onnx.py\n"
        "@@ -10,3 +10,9 @@ def test_softplus():\n"
        "     x = 1\n"
        "+    y = 2\n"
        "+\n"
        "+\n"
        "+def test_softplus_negative():\n"
        "+    pass\n"
        "diff --git a/python/tvm/relax/frontend/onnx/onnx_frontend.py "
        "b/python/tvm/relax/frontend/onnx/onnx_frontend.py\n"
        "--- a/python/tvm/relax/frontend/onnx/onnx_frontend.py\n"
        "+++ b/python/tvm/relax/frontend/onnx/onnx_frontend.py\n"
        "@@ -1 +1,2 @@ def test_not_a_test_file():\n"
        "+def test_helper():\n",
    )
    assert rollprove.touched_tests(patch) == {"test_softplus", "test_softplus_negative"}


def test_failing_upstream_tests_go_to_the_patch_that_touches_them(fork: Fork) -> None:
    fork.commit_change(
        "tests/python/test_op.py", "", "\n\ndef test_mine():\n    pass\n", "[Relax] Mine"
    )
    assert fork.run("export") == 0
    series = seriesmod.load(fork.root / "patches")
    result = roll.RollResult("b" * 40, [roll.Row("mine.patch", roll.CLEAN)], "c" * 40)
    comparison = upstream_tests.compare(
        {"t::test_mine[a]": "passed", "t::test_other": "passed"},
        {"t::test_mine[a]": "failed", "t::test_other": "failed"},
    )
    rows = [Row("mine.patch", (), Outcome(FAIL), Outcome(PASS))]
    proven, unattributed = rollprove.judge(series, result, rows, comparison)
    assert [(p.verdict, p.upstream) for p in proven] == [(rollprove.BROKEN, ["t::test_mine[a]"])]
    assert unattributed == ["t::test_other"]


class _Stand:
    """Stand-ins for the builds and the tests: `absorbed` pass on stock REV, `broken` fail
    rolled, everything else fails on stock and passes rolled."""

    def __init__(self, absorbed: set[str], broken: frozenset[str] = frozenset()) -> None:
        self.absorbed, self.broken = absorbed, broken
        self.rounds: list[list[str]] = []

    def install(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        stand = self

        def wheels(self: rollprove.Prover, result: roll.RollResult) -> tuple[Path, Path]:
            stand.rounds.append([r.patch for r in result.rows])
            return tmp_path / "stock.whl", tmp_path / f"rolled-{len(stand.rounds)}.whl"

        def test(
            self: rollprove.Prover, series: seriesmod.Series, result: roll.RollResult, *_: Path
        ) -> tuple[list[Row], None]:
            rows = []
            for r in result.rows:
                stock = PASS if r.patch in stand.absorbed else FAIL
                fork = FAIL if r.patch in stand.broken else PASS
                applied = r.status in (roll.CLEAN, roll.THREE_WAY)
                rows.append(
                    Row(r.patch, (), Outcome(stock), Outcome(fork) if applied else None, "x")
                )
            return rows, None

        monkeypatch.setattr(rollprove.Prover, "wheels", wheels)
        monkeypatch.setattr(rollprove.Prover, "test", test)
        monkeypatch.setattr(rollprove.Prover, "prepare_tree", lambda self, result: None)


@pytest.fixture
def two(fork: Fork) -> Fork:
    fork.commit_change(PY_FILE, "return x + 3", "return x - 3", "[Relax] Fix op3")
    fork.commit_change("src/op.cc", "return 1", "return 42", "[Op] Native fix")
    assert fork.run("export") == 0
    return fork


def _upstream_moves(fork: Fork, path: str, old: str, new: str, tag: str) -> str:
    up = fork.upstream.repo
    write(up / path, (up / path).read_text().replace(old, new))
    git(up, "commit", "-qam", f"upstream change to {path}")
    git(up, "tag", tag)
    return git(up, "rev-parse", "HEAD")


def test_an_applied_patch_upstream_absorbed_is_dropped_and_the_rest_rolled_again(
    two: Fork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As fold-min-max on upstream main: it still applies, but upstream fixed the bug its own
    way. The proof drops it and proves the rest without it; then the roll is written."""
    new = _upstream_moves(two, "tests/python/test_op.py", "pass", "assert True", "v1.1.0")
    stand = _Stand(absorbed={"fix-op3.patch"})
    stand.install(monkeypatch, tmp_path)
    page = tmp_path / "proof.md"
    args = ("roll", "--to", "v1.1.0", "--prove", "--table", str(page))
    assert two.run(*args, "--source", str(two.upstream.repo)) == 0
    assert stand.rounds == [["fix-op3.patch", "native-fix.patch"], ["native-fix.patch"]]
    out = capsys.readouterr().out
    assert "absorbed" in out and "2 round(s)" in out
    assert seriesmod.read_order(two.root / "patches") == ["native-fix.patch"]
    assert not (two.root / "patches/fix-op3.patch").exists()
    lock = tomllib.loads((two.root / "patches/lock.toml").read_text())
    assert lock["upstream"]["commit"] == new
    text = page.read_text()
    assert "| absorbed | 1 |" in text and "| clean | 1 |" in text
    assert "| `fix-op3` | clean | absorbed | its regression tests pass on stock REV |" in text


def test_a_patch_broken_after_the_roll_changes_nothing(
    two: Fork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As optional-tensor on upstream main: it merges, but upstream's new early return runs
    first, so its test fails on the rolled build. A textual roll said clean."""
    _upstream_moves(two, "tests/python/test_op.py", "pass", "assert True", "v1.1.0")
    _Stand(absorbed=set(), broken=frozenset({"fix-op3.patch"})).install(monkeypatch, tmp_path)
    before = {p.name: p.read_bytes() for p in (two.root / "patches").iterdir()}
    args = ("roll", "--to", "v1.1.0", "--prove", "--source", str(two.upstream.repo))
    assert two.run(*args) != 0
    out = capsys.readouterr()
    assert "BROKEN after the roll" in out.out
    assert "fix-op3.patch: BROKEN after the roll" in out.err
    assert {p.name: p.read_bytes() for p in (two.root / "patches").iterdir()} == before


def test_a_conflict_upstream_absorbed_is_dropped_not_a_stop(
    two: Fork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """As pool-adaptively on upstream main: upstream rewrote the code the patch changes (a
    conflict), and its regression tests pass on stock REV: absorbed, dropped, roll written."""
    _upstream_moves(two, PY_FILE, "return x + 3", "return x * 3", "v2.0.0")
    stand = _Stand(absorbed={"fix-op3.patch"})
    stand.install(monkeypatch, tmp_path)
    args = ("roll", "--to", "v2.0.0", "--prove", "--source", str(two.upstream.repo))
    assert two.run(*args) == 0
    assert len(stand.rounds) == 1  # nothing applied was absorbed: one round
    assert seriesmod.read_order(two.root / "patches") == ["native-fix.patch"]
    assert two.run("export", "--check") == 0


def test_a_conflict_still_needed_stops_the_roll(
    two: Fork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _upstream_moves(two, PY_FILE, "return x + 3", "return x * 3", "v2.0.0")
    _Stand(absorbed=set()).install(monkeypatch, tmp_path)
    args = ("roll", "--to", "v2.0.0", "--prove", "--source", str(two.upstream.repo))
    assert two.run(*args) != 0
    assert "fix-op3.patch: CONFLICT" in capsys.readouterr().err


def test_an_absorbed_patch_named_in_depends_on_stops_the_write(two: Fork, tmp_path: Path) -> None:
    two.commit_change(
        PY_FILE, "return x + 4", "return x - 4", "[Relax] Fix op4", extra="Depends-On: fix-op3\n"
    )
    assert two.run("export") == 0
    series = seriesmod.load(two.root / "patches")
    rows = [
        rollprove.Proven("fix-op3.patch", roll.CLEAN, rollprove.ABSORBED),
        rollprove.Proven("native-fix.patch", roll.CLEAN, roll.CLEAN),
        rollprove.Proven("fix-op4.patch", roll.CLEAN, roll.CLEAN),
    ]
    proof = rollprove.Proof("v2", "b" * 40, rows, tmp_path / "s.whl", tmp_path / "f.whl", 1)
    with pytest.raises(PatchError, match=r"fix-op4\.patch: Depends-On names absorbed fix-op3"):
        rollprove.refuse(proof, series)


def test_the_proving_tree_takes_the_checkouts_submodules(fork: Fork, tmp_path: Path) -> None:
    settings = Settings(cache_dir=tmp_path / "cache")
    tree = rollbuild.prepare(settings, fork.checkout, fork.upstream.commit)
    assert tree == tmp_path / "cache/roll/tvm"
    assert (tree / "3rdparty/tvm-ffi/include/ffi.h").is_file()
    assert git(tree, "rev-parse", "HEAD") == fork.upstream.commit
    write(tree / "stray.txt", "left by a build")
    rollbuild.prepare(settings, fork.checkout, fork.upstream.commit)  # again: reused, cleaned
    assert not (tree / "stray.txt").exists()
    # upstream moves its submodule: the checkout must have that commit first
    ffi = fork.upstream.ffi
    write(ffi / "include/ffi.h", "int ffi2(void);\n")
    git(ffi, "commit", "-qam", "ffi moves")
    up = fork.upstream.repo
    git(up / "3rdparty/tvm-ffi", "pull", "-q", str(ffi), "main")
    git(up, "commit", "-qam", "bump ffi")
    fork.tvm("fetch", "-q", "--no-recurse-submodules", str(up), "main:refs/heads/moved")
    moved = fork.tvm("rev-parse", "moved")
    with pytest.raises(SourceError, match="needs 3rdparty/tvm-ffi at"):
        rollbuild.prepare(settings, fork.checkout, moved)


def test_outcomes_on_record_are_not_run_again(two: Fork, tmp_path: Path) -> None:
    """A proof stopped during its tests, or proven again with a new rolled build, reruns only
    what has no record: stock REV's outcomes are kept by its wheel's sha256."""
    series = seriesmod.load(two.root / "patches")
    files = rollprove.TestFiles(two.root)
    ran: list[list[str]] = []

    def jobs_for(jobs: list) -> dict[str, Outcome]:
        ran.append(sorted(j.key for j in jobs))
        return {j.key: Outcome(FAIL if j.key.endswith("/stock") else PASS) for j in jobs}

    stock = (tmp_path / "py", rollprove.Results(tmp_path / "r", "a" * 64, files))
    first = (tmp_path / "py", rollprove.Results(tmp_path / "r", "b" * 64, files))
    included = {"fix-op3.patch"}  # native-fix did not apply: its stock side only
    rows = rollprove.regression_rows(series, included, jobs_for, stock, first)
    assert ran == [["fix-op3.patch/fork", "fix-op3.patch/stock", "native-fix.patch/stock"]]
    assert [(r.patch, r.verdict) for r in rows] == [
        ("fix-op3.patch", "ok: needed and sufficient"),
        ("native-fix.patch", "needed (stock FAIL); fork not run: does not apply on REV"),
    ]
    second = (tmp_path / "py", rollprove.Results(tmp_path / "r", "c" * 64, files))
    again = rollprove.regression_rows(series, included, jobs_for, stock, second)
    assert ran[1] == ["fix-op3.patch/fork"] and again == rows
    write(two.root / "tests/regression/test_other.py", "def test_y():\n    pass\n")
    assert len(rollprove.regression_rows(series, included, jobs_for, stock, second)) == 2
    assert len(ran) == 2  # a test module no patch names: nothing reruns
    write(two.root / "tests/regression/test_example.py", "def test_x():\n    assert 1\n")
    changed = rollprove.TestFiles(two.root)
    stock = (tmp_path / "py", rollprove.Results(tmp_path / "r", "a" * 64, changed))
    second = (tmp_path / "py", rollprove.Results(tmp_path / "r", "c" * 64, changed))
    rollprove.regression_rows(series, included, jobs_for, stock, second)
    assert len(ran[2]) == 3  # a changed test module: nothing on record counts

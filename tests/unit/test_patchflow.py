"""apply/export round trip, atomic failure, dirty checkouts, stale detection."""

from __future__ import annotations

import pytest

from tvmfork import series as seriesmod
from tvmfork.errors import PatchError, SourceError
from tvmfork.patchflow import apply

from .conftest import PY_FILE, Fork, write

pytestmark = pytest.mark.unit


def _two_patches(fork: Fork) -> None:
    fork.commit_change(PY_FILE, "return x + 3", "return x - 3", "[Relax] Fix op3")
    fork.commit_change("src/op.cc", "return 1", "return 42", "[Op] Native fix")
    assert fork.run("export") == 0


def test_export_apply_export_is_byte_identical(fork: Fork) -> None:
    _two_patches(fork)
    patches = fork.root / "patches"
    before = {p.name: p.read_bytes() for p in patches.iterdir()}
    assert seriesmod.read_order(patches) == ["fix-op3.patch", "native-fix.patch"]
    # Back to the base, apply the series, export again: nothing may change.
    fork.tvm("checkout", "-q", "-B", "fork", "refs/tvmfork/base")
    assert fork.run("apply") == 0
    assert fork.run("export", "--check") == 0
    assert fork.run("export") == 0
    assert {p.name: p.read_bytes() for p in patches.iterdir()} == before


def test_same_series_gives_same_commits_and_untouched_files(fork: Fork) -> None:
    _two_patches(fork)
    fork.tvm("checkout", "-q", "-B", "fork", "refs/tvmfork/base")
    assert fork.run("apply") == 0
    head = fork.tvm("rev-parse", "HEAD")
    py = fork.checkout / PY_FILE
    mtime = py.stat().st_mtime_ns
    assert fork.run("apply") == 0  # already applied: a no-op
    assert fork.tvm("rev-parse", "HEAD") == head
    assert py.stat().st_mtime_ns == mtime


def test_export_check_reports_stale(fork: Fork, capsys: pytest.CaptureFixture[str]) -> None:
    _two_patches(fork)
    fork.commit_change("src/op.cc", "", "// more\n", "[Op] Another")
    assert fork.run("export", "--check") == 1
    assert "another.patch: new" in capsys.readouterr().out


def test_failed_apply_leaves_checkout_as_it_was(fork: Fork) -> None:
    _two_patches(fork)
    fork.tvm("checkout", "-q", "-B", "fork", "refs/tvmfork/base")
    # Upstream-side drift in the checkout's base commit is simulated by editing the patch.
    patch = fork.root / "patches/native-fix.patch"
    patch.write_text(patch.read_text().replace("-int op() { return 1; }", "-int op() { nope; }"))
    head, status = fork.tvm("rev-parse", "HEAD"), fork.tvm("status", "--porcelain")
    content = (fork.checkout / PY_FILE).read_text()
    series = seriesmod.load(fork.root / "patches")
    with pytest.raises(PatchError) as err:
        apply(series, fork.checkout)
    msg = str(err.value)
    assert "native-fix.patch" in msg and "file: src/op.cc" in msg and "@@ -1 +1 @@" in msg
    assert fork.tvm("rev-parse", "HEAD") == head
    assert fork.tvm("status", "--porcelain") == status
    assert fork.tvm("symbolic-ref", "--short", "HEAD") == "fork"
    assert (fork.checkout / PY_FILE).read_text() == content
    assert "worktree" not in fork.tvm("worktree", "list").split("\n", 1)[-1]


def test_dirty_checkout_is_refused(fork: Fork) -> None:
    _two_patches(fork)
    fork.tvm("checkout", "-q", "-B", "fork", "refs/tvmfork/base")
    write(fork.checkout / "src/op.cc", "local edit\n")
    with pytest.raises(SourceError, match="uncommitted changes"):
        apply(seriesmod.load(fork.root / "patches"), fork.checkout)
    assert (fork.checkout / "src/op.cc").read_text() == "local edit\n"


def test_unexported_commits_are_not_discarded(fork: Fork) -> None:
    _two_patches(fork)
    fork.commit_change("src/op.cc", "", "// wip\n", "[Op] Work in progress")
    wip = fork.tvm("rev-parse", "HEAD")
    with pytest.raises(SourceError, match="tvmfork export"):
        apply(seriesmod.load(fork.root / "patches"), fork.checkout)
    assert fork.tvm("rev-parse", "HEAD") == wip
    apply(seriesmod.load(fork.root / "patches"), fork.checkout, force=True)
    assert fork.tvm("rev-parse", "refs/tvmfork/backup") == wip


def test_corrupt_patch_is_an_error(fork: Fork) -> None:
    write(fork.root / "patches/bad.patch", "this is not a patch\n")
    write(fork.root / "patches/series", "bad.patch\n")
    with pytest.raises(PatchError, match="not a git format-patch"):
        seriesmod.load(fork.root / "patches")


def test_export_refuses_a_checkout_mid_rebase(
    fork: Fork, capsys: pytest.CaptureFixture[str]
) -> None:
    """Mid-rebase HEAD holds only the replayed commits: an export then would delete the rest
    of the series from patches/ (seen: three patches gone after an export during `edit`)."""
    _two_patches(fork)
    patches = fork.root / "patches"
    before = {p.name: p.read_bytes() for p in patches.iterdir()}
    base = fork.tvm("rev-parse", "refs/tvmfork/base")
    fork.tvm("-c", "sequence.editor=sed -i 1s/^pick/edit/", "rebase", "-q", "-i", base)
    assert fork.run("export") == SourceError.exit_code
    assert "middle of a rebase" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in patches.iterdir()} == before
    fork.tvm("rebase", "--continue")
    assert fork.run("export", "--check") == 0

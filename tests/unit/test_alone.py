"""`tvmfork verify --alone`: each patch against its Depends-On closure without and with it,
on overlays of a small stock package (`conftest.make_stock_wheel`)."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from tvmfork import alone
from tvmfork import series as seriesmod
from tvmfork.verify import FAIL, PASS, Outcome

from .conftest import PY_FILE, Fork, write

pytestmark = pytest.mark.unit


def _package(fork: Fork, tmp_path: Path) -> Path:
    """The stock wheel's `tvm` package unpacked, as a venv holds it."""
    site = tmp_path / "site"
    with zipfile.ZipFile(fork.wheel) as zf:
        zf.extractall(site)
    return site / "tvm"


def _patch(fork: Fork, op: int, test: str, body: str, depends: str = "") -> None:
    write(fork.root / test, body)
    extra = f"Depends-On: {depends}\n" if depends else ""
    fork.commit_change(
        PY_FILE, f"return x + {op}", f"return x - {op}", f"[Relax] Fix op{op}", test, extra=extra
    )


def test_overlay_tree_links_the_package_and_writes_the_patched_files(
    fork: Fork, tmp_path: Path
) -> None:
    _patch(fork, 3, "tests/regression/test_a.py", "def test_x():\n    pass\n")
    _patch(fork, 4, "tests/regression/test_b.py", "def test_x():\n    pass\n")
    assert fork.run("export") == 0
    series = seriesmod.load(fork.root / "patches")
    package = _package(fork, tmp_path)
    root = alone.overlay_tree(package, fork.wheel, list(series.patches), tmp_path / "cache")
    legalize = root / "tvm/relax/legalize.py"
    assert not legalize.is_symlink()
    text = legalize.read_text()
    assert "return x - 3" in text and "return x - 4" in text and "return x + 5" in text
    lib = root / "tvm/lib/libtvm.so"
    assert lib.is_symlink() and lib.resolve() == (package / "lib/libtvm.so").resolve()
    # the package itself is untouched, and a second call reuses the tree
    assert "return x + 3" in (package / "relax/legalize.py").read_text()
    legalize.write_text("kept")
    again = alone.overlay_tree(package, fork.wheel, list(series.patches), tmp_path / "cache")
    assert again == root and legalize.read_text() == "kept"
    # no patches: the stock package as it is
    bare = alone.overlay_tree(package, fork.wheel, [], tmp_path / "cache")
    assert "return x + 3" in (bare / "tvm/relax/legalize.py").read_text()


def test_each_verdict_from_real_runs(
    fork: Fork, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = "from tvm.relax.legalize import op3, op4, op6, op7\n\ndef test_x():\n"
    # A: needed on stock
    _patch(fork, 3, "tests/regression/test_a.py", t + "    assert op3(5) == 2\n")
    a = "fix-op3.patch"
    # B: builds on A (its test needs both), names it: needed on its Depends-On
    _patch(fork, 4, "tests/regression/test_b.py", t + "    assert op3(5) + op4(5) == 3\n", a)
    # C: its test needs A's change too, but it does not name A: incomplete
    _patch(fork, 6, "tests/regression/test_c.py", t + "    assert op3(5) + op6(5) == 1\n")
    # D: its test passes on its Depends-On without it: not needed
    _patch(fork, 7, "tests/regression/test_d.py", t + "    assert op3(5) == 2\n", a)
    assert fork.run("export") == 0
    series = seriesmod.load(fork.root / "patches")
    assert next(p.name for p in series.patches) == a
    package = _package(fork, tmp_path)
    monkeypatch.setattr(alone, "stock_package", lambda python: package)
    rows = alone.verify_alone(
        series, fork.root, Path(sys.executable), fork.wheel, tmp_path / "cache", timeout=120
    )
    got = {
        r.patch: (
            r.without.status if r.without else "-",
            r.with_it.status if r.with_it else "-",
            r.verdict,
        )
        for r in rows
    }
    assert got[a] == (FAIL, PASS, "ok: needed on stock"), got
    assert got["fix-op4.patch"] == (FAIL, PASS, "ok: needed on its Depends-On"), got
    assert got["fix-op6.patch"][:2] == (FAIL, FAIL), got
    assert got["fix-op6.patch"][2].startswith("INCOMPLETE"), got
    assert got["fix-op7.patch"][2].startswith("NOT NEEDED"), got
    assert [r.ok for r in rows] == [True, True, False, False]
    assert "fix-op6.patch" in alone.table(rows)
    page = alone.markdown(rows, "t", [])
    assert "| needed alone | 2 |" in page and "| incomplete Depends-On | 1 |" in page
    assert "| `fix-op4` | 1 | FAIL | pass | needed alone | ok: needed on its Depends-On |" in page


def test_a_native_patch_cannot_be_shown_and_says_why() -> None:
    row = alone.AloneRow("x.patch", (), None, None, "native patch: needs a source build")
    assert row.verdict == "cannot be shown: native patch: needs a source build" and row.ok
    row = alone.AloneRow("x.patch", ("a.patch",), None, None, f"{alone.NOT_APPLYING} (x)")
    assert row.verdict.startswith("INCOMPLETE") and not row.ok
    fail, ok = Outcome(FAIL), Outcome(PASS)
    assert alone.AloneRow("x.patch", (), Outcome("ERROR"), ok).verdict.startswith("UNPROVEN")
    assert alone.AloneRow("x.patch", (), fail, ok).ok

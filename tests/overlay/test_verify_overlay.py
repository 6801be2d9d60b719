"""Overlay lane: build the overlay wheel and prove every Python patch with `tvmfork verify`.

This is the real thing: the stock wheel from the lock (downloaded once into the cache and
verified), a stock venv and a fork venv, and each patch's regression test run on both sides.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tvmfork import series as seriesmod

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.overlay


def _python_patches() -> list[str]:
    """The patches an overlay carries: not native, and needing no native patch."""
    series = seriesmod.load(ROOT / "patches")
    return [p.name for p in series.patches if not series.needs_build(p)]


@pytest.fixture(scope="module")
def verified() -> tuple[dict[str, str], str]:
    """One `tvmfork verify` of every Python patch (each side's test server imports torch and
    TVM once): each patch's row of its table, and its whole output."""
    patches = _python_patches()
    r = subprocess.run(
        [sys.executable, "-m", "tvmfork", "--repo", str(ROOT), "verify", *patches],
        capture_output=True,
        text=True,
        check=False,
    )
    print(r.stderr[-4000:], file=sys.stderr)
    rows = {line.split(" ", 1)[0]: line for line in r.stdout.splitlines() if line.strip()}
    return {p: rows[p] for p in patches if p in rows}, r.stdout + r.stderr[-4000:]


@pytest.mark.parametrize("patch", _python_patches())
def test_patch_fails_on_stock_and_passes_on_fork(
    patch: str, verified: tuple[dict[str, str], str]
) -> None:
    rows, output = verified
    assert patch in rows, f"tvmfork verify printed no row for {patch}:\n{output[-6000:]}"
    row = rows[patch]
    detail = output[output.find(f"--- {patch} on stock") :][:6000] if "---" in output else ""
    assert "FAIL" in row.split()[1] or "CRASH" in row, f"{row}\n{detail}"
    assert "ok: needed and sufficient" in row, f"{row}\n{detail}"


def test_native_patches_are_reported_not_run() -> None:
    series = seriesmod.load(ROOT / "patches")
    native = [p.name for p in series.patches if series.needs_build(p)]
    if not native:
        pytest.skip("the series has no native patches yet")
    r = subprocess.run(
        [sys.executable, "-m", "tvmfork", "--repo", str(ROOT), "verify", *native],
        capture_output=True,
        text=True,
        check=False,
    )
    for name in native:
        row = next(line for line in r.stdout.splitlines() if line.startswith(name))
        assert "not run:" in row and "needs a source build" in row, row


def test_info_describes_the_verified_venvs() -> None:
    """After verify, `tvmfork info` on its fork venv lists every patch, tvm-ffi in range."""
    from tvmfork import lock, settings, sides

    s, pin = settings.load(ROOT), lock.load(ROOT / "patches" / seriesmod.LOCK)
    fork_py, stock_py = sides.side_python(s, pin, "fork"), sides.side_python(s, pin, "stock")
    r = subprocess.run(
        [sys.executable, "-m", "tvmfork", "--repo", str(ROOT), "info", "--python", str(fork_py)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "(in range: " in r.stdout
    for patch in _python_patches():
        assert "included python" in r.stdout and patch in r.stdout
    r = subprocess.run(
        [sys.executable, "-m", "tvmfork", "info", "--python", str(stock_py)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "stock TVM (no fork manifest)" in r.stdout

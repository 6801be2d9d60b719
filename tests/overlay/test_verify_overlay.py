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
    return [p.name for p in seriesmod.load(ROOT / "patches").patches if not p.native]


@pytest.mark.parametrize("patch", _python_patches())
def test_patch_fails_on_stock_and_passes_on_fork(patch: str) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "tvmfork", "--repo", str(ROOT), "verify", patch],
        capture_output=True,
        text=True,
        check=False,
    )
    print(r.stdout)
    print(r.stderr[-4000:], file=sys.stderr)
    assert r.returncode == 0, f"tvmfork verify {patch} failed:\n{r.stdout}\n{r.stderr[-4000:]}"
    row = next(line for line in r.stdout.splitlines() if line.startswith(patch))
    assert "FAIL" in row.split()[1] or "CRASH" in row, row
    assert "ok: needed and sufficient" in row, row


def test_native_patches_are_reported_not_run() -> None:
    native = [p.name for p in seriesmod.load(ROOT / "patches").patches if p.native]
    if not native:
        pytest.skip("the series has no native patches yet")
    r = subprocess.run(
        [sys.executable, "-m", "tvmfork", "--repo", str(ROOT), "verify", *native],
        capture_output=True,
        text=True,
        check=False,
    )
    assert "not run: native patch: needs a source build" in r.stdout


def test_info_describes_the_verified_venvs() -> None:
    """After verify, `tvmfork info` on its fork venv lists every patch, tvm-ffi in range."""
    from tvmfork import lock, settings, venvs

    s, pin = settings.load(ROOT), lock.load(ROOT / "patches" / seriesmod.LOCK)
    fork_py, stock_py = venvs.side_python(s, pin, "fork"), venvs.side_python(s, pin, "stock")
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

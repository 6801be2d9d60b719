"""scripts/multi_isa.py on the fork's TVM: a model built for the host's CPU and for several
x86-64 levels in one library, both checked against PyTorch, timed side by side."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tvmfork import lock, settings, sides

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "multi_isa.py"
pytestmark = pytest.mark.conformance


def _fork_python() -> Path:
    subprocess.run([sys.executable, "-m", "tvmfork", "--repo", str(ROOT), "envs"], check=True)
    pin = lock.load(ROOT / "patches" / "lock.toml")
    return sides.side_python(settings.load(ROOT), pin, "fork")


def _script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(_fork_python()), str(SCRIPT), *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "TVM_NUM_THREADS": "1"},
        timeout=1200,
    )


def test_a_model_built_for_three_levels_is_timed_against_its_host_build() -> None:
    r = _script("torchvision", "-k", "squeezenet1_1", "--reps", "2")
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [ln for ln in r.stdout.splitlines() if ln.startswith("| squeezenet1_1 |")]
    assert len(rows) == 1 and "error" not in rows[0], r.stdout
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    torch_ms, host_ms, multi_ms, ratio = (float(c) for c in cells[1:5])
    assert min(torch_ms, host_ms, multi_ms) > 0
    # the row prints the times to 0.01 ms and the ratio, of the unrounded times, to 0.01
    rounding = 0.005 + ratio * (0.005 / host_ms + 0.005 / multi_ms)
    assert ratio == pytest.approx(multi_ms / host_ms, abs=rounding + 1e-9)
    assert "host target" in r.stdout and "x86-64,x86-64-v3,x86-64-v4" in r.stdout


def test_a_level_list_the_fork_refuses_is_said_before_any_build() -> None:
    r = _script("torchvision", "-k", "squeezenet1_1", "--levels", "x86-64,skylake")
    assert r.returncode == 2 and "x86-64 psABI level" in r.stderr, r.stderr[-2000:]
    assert "| squeezenet1_1 |" not in r.stdout

"""The native lane proves nothing when nothing ran: it says NOT RUN and exits non-zero."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def _native_lane(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TVMFORK_")}
    env["TVMFORK_CHECKOUT_DIR"] = str(tmp_path / "no-checkout")  # nothing to test against
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/native", *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_nothing_to_run_is_not_a_pass(tmp_path: Path) -> None:
    r = _native_lane(tmp_path)
    assert r.returncode != 0, r.stdout
    assert "native lane: NOT RUN (no test ran)" in r.stdout
    assert "no TVM checkout" in r.stdout  # and why


def test_allow_not_run_exits_0_still_saying_so(tmp_path: Path) -> None:
    r = _native_lane(tmp_path, "--allow-not-run")
    assert r.returncode == 0, r.stdout
    assert "native lane: NOT RUN (no test ran)" in r.stdout

"""`pytest -m regression` selects the regression modules: each of their tests is marked as it
is collected, before `-m` selects (a marker that a fixture added came after the selection, and
`-m regression` selected nothing)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tvmfork import lock, settings, sides
from tvmfork import series as seriesmod

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.overlay


def _collected(python: str, *args: str) -> int:
    r = subprocess.run(
        [python, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode in (0, 5), r.stdout[-3000:] + r.stderr[-3000:]
    found = re.search(r"(\d+)(?:/\d+)? tests? (?:collected|selected)", r.stdout)
    return int(found.group(1)) if found else 0


def test_m_regression_selects_every_regression_test() -> None:
    s, pin = settings.load(ROOT), lock.load(ROOT / "patches" / seriesmod.LOCK)
    python = str(sides.side_python(s, pin, "fork"))
    everything = _collected(python, "tests/regression")
    modules = len(list((ROOT / "tests" / "regression").glob("test_*.py")))
    assert everything >= modules > 40
    assert _collected(python, "-m", "regression", "tests/regression") == everything
    assert _collected(python, "-m", "not regression", "tests/regression") == 0

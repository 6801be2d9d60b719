"""The native lane proves nothing when nothing ran: it says NOT RUN and exits non-zero."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tvmfork import nativelane
from tvmfork.series import Series
from tvmfork.series import load as series_load

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


def _series(tmp_path: Path, native_body: str) -> Series:
    from .conftest import write

    patches = tmp_path / "patches"
    body = "From 0 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] {s}\n\n{s}\n\n---\n"
    py_diff = "diff --git a/python/tvm/x.py b/python/tvm/x.py\n"
    write(patches / "py.patch", body.format(s="py") + py_diff)
    cc_diff = f"diff --git a/src/{native_body} b/src/{native_body}\n"
    write(patches / "cc.patch", body.format(s="cc") + cc_diff)
    write(patches / "series", "py.patch\ncc.patch\n")
    return series_load(patches)


def test_a_passing_lane_is_recorded_and_a_changed_native_closure_is_stale(tmp_path: Path) -> None:
    series = _series(tmp_path, "y.cc")
    assert [p.name for p in series.native_closure()] == ["cc.patch"]
    assert "no record" in (nativelane.staleness(tmp_path, series) or "")
    result = nativelane.Result("2026-11-27", "abc1234", "w.whl", {"passed": 9}, "AMD EPYC")
    (tmp_path / "docs").mkdir()
    (tmp_path / nativelane.RECORD).write_text(nativelane.render(series, result))
    assert nativelane.staleness(tmp_path, series) is None
    assert "- tests: 9 passed" in (tmp_path / nativelane.RECORD).read_text()
    # a Python-only patch changing leaves the record valid; a native one makes it stale
    write_py = tmp_path / "patches" / "py.patch"
    write_py.write_text(write_py.read_text() + "# more\n")
    assert nativelane.staleness(tmp_path, series_load(tmp_path / "patches")) is None
    # a native patch's message (its title, a trailer) is not what the lane proves
    cc = tmp_path / "patches" / "cc.patch"
    cc.write_text(cc.read_text().replace("Subject: [PATCH] cc", "Subject: [PATCH] [TIRx] cc"))
    assert nativelane.staleness(tmp_path, series_load(tmp_path / "patches")) is None
    changed = _series(tmp_path, "z.cc")
    assert "changed since the native lane last passed (2026-11-27" in (
        nativelane.staleness(tmp_path, changed) or ""
    )

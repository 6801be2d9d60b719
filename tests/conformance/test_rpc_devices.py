"""The RPC lane (`tvmfork conformance --rpc-tracker HOST:PORT --rpc-key KEY`) on devices of
this machine: x86 servers of the stock venv behind a tracker of their own, started as the
emulated aarch64 lane starts its devices (`devices.Devices`). Cases run remotely and match;
a device killed mid-case, a key with no device, an unreachable tracker and a library built
for another triple each end with a clear error, the first charged to its case alone.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tvmfork import lock as lockmod
from tvmfork import settings, sides, venvs
from tvmfork.conformance import devices

from .lane import conformance, records

ROOT = Path(__file__).resolve().parents[2]
CASES = str(Path(__file__).with_name("cases_for_rpc.py"))
KEY = "local-x86"
pytestmark = pytest.mark.conformance


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[devices.Devices]:
    s = settings.load(ROOT)
    stock = sides.side_python(s, lockmod.load(ROOT / "patches/lock.toml"), "stock")
    deps = venvs.deps_venv(s, ROOT)[0]
    tools = devices.rpc_tools(s.cache_dir / "venvs", deps, s.python)
    logs = tmp_path_factory.mktemp("devices")
    env = {"PYTHONPATH": str(tools), "TVM_NUM_THREADS": "1"}
    with devices.Devices(stock, tools, [str(stock)], 2, KEY, logs, server_env=env) as d:
        yield d


def _conformance(*args: str, report: Path) -> subprocess.CompletedProcess[str]:
    return conformance(*args, "--report", str(report))


def _results(report: Path) -> dict[str, dict[str, object]]:
    return {f"{r['side']}/{r['case']}": r for r in records(report)}


def test_cases_run_on_the_devices_and_a_dead_device_fails_its_case_alone(
    local: devices.Devices, tmp_path: Path
) -> None:
    assert not any(local.busy(i) for i in range(2))
    cmd = [sys.executable, "-m", "tvmfork", "--repo", str(ROOT), "conformance"]
    cmd += ["--torch-module", CASES, "--side", "fork", "--rpc-tracker", local.tracker]
    cmd += ["--rpc-key", KEY, "--report", str(tmp_path)]
    run = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = None
    assert run.stderr is not None
    for line in run.stderr:
        print(line, end="", file=sys.stderr)
        if "[1/3]" in line:  # b_slow is next: kill the device that takes its session
            deadline = time.monotonic() + 300
            while any(local.busy(i) for i in range(2)) and time.monotonic() < deadline:
                time.sleep(0.05)  # a_small's session ends (b_slow compiles for seconds first)
            while killed is None and time.monotonic() < deadline and run.poll() is None:
                busy = [i for i in range(2) if local.busy(i)]
                if busy:
                    killed = busy[0]
                    local.kill_server(killed)
                time.sleep(0.05)
    out = run.communicate()[0]
    assert killed is not None, "no device took b_slow's session"
    by = _results(tmp_path)
    assert by["fork/a_small"]["status"] == "ok", by
    assert "upload_s" in by["fork/a_small"]  # it went through a device of the tracker
    slow = by["fork/b_slow"]
    assert slow["status"] == "error" and slow["stage"] in ("upload", "run"), slow
    assert slow["error"], slow
    # the next case takes a fresh session, on the device still alive
    assert by["fork/c_small"]["status"] == "ok", by
    assert "correctness only" in (tmp_path / "report.md").read_text() or "fork 2 ok" in out


def test_both_sides_at_once_each_case_hands_its_device_back(
    local: devices.Devices, tmp_path: Path
) -> None:
    """Two workers, two devices: each case's session must end with the case (a session left
    to the garbage collector held its device, and the next request waited until --timeout)."""
    args = ["ci", "-k", "test_and*", "--jobs", "2", "--timeout", "60"]
    r = _conformance(*args, "--rpc-tracker", local.tracker, "--rpc-key", KEY, report=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    by = _results(tmp_path)
    assert len(by) >= 16 and all(c["status"] == "ok" for c in by.values()), by


def test_a_key_with_no_device_and_an_unreachable_tracker_are_usage_errors(
    local: devices.Devices, tmp_path: Path
) -> None:
    args = ["--torch-module", CASES, "-k", "a_small", "--side", "fork"]
    r = _conformance(*args, "--rpc-tracker", local.tracker, "--rpc-key", "nope", report=tmp_path)
    assert r.returncode == 2
    assert f"RPC tracker {local.tracker} has no device under key 'nope'" in r.stderr
    assert KEY in r.stderr  # the keys it has
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = f"127.0.0.1:{s.getsockname()[1]}"
    r = _conformance(*args, "--rpc-tracker", closed, "--rpc-key", KEY, report=tmp_path)
    assert r.returncode == 2 and f"RPC tracker {closed} is unreachable" in r.stderr
    r = _conformance(*args, "--target", "aarch64", report=tmp_path)
    assert r.returncode == 2 and "--target aarch64 runs on a device" in r.stderr


@pytest.mark.skipif(
    shutil.which("aarch64-linux-gnu-g++") is None,
    reason="no aarch64 cross compiler (Debian: g++-aarch64-linux-gnu; .ci/run installs it)",
)
def test_a_library_for_another_triple_fails_at_upload(
    local: devices.Devices, tmp_path: Path
) -> None:
    """--target aarch64 against x86 devices: linked here, refused there, charged to the case."""
    args = ["--torch-module", CASES, "-k", "a_small", "--side", "fork", "--target", "aarch64"]
    r = _conformance(*args, "--rpc-tracker", local.tracker, "--rpc-key", KEY, report=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    case = _results(tmp_path)["fork/a_small"]
    assert case["status"] == "error" and case["stage"] == "upload", case
    assert "the device cannot load the library, which is built for aarch64" in str(case["error"])

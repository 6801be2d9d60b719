"""RPC devices on this machine: a TVM tracker and its servers, started for one run and torn
down after it. `emulated_aarch64` makes the servers 64-bit Arm ones, each a Python of a
Debian arm64 root (debootstrap) run by qemu-aarch64 user-mode emulation, with the fork's
aarch64 overlay wheel installed in that root: the lane of docs/conformance.md's 'On other
targets: aarch64 through RPC'. The tests start x86 servers the same way (`Devices`).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tvmfork import proc, ui, venvs
from tvmfork.errors import ProcessError, UsageError

RPC_TOOLS = ["tornado", "psutil", "cloudpickle"]  # apache-tvm's `rpc` extra: the tracker's needs
EMULATED_KEY = "aarch64-emulated"
DEBIAN_SUITE = "bookworm"  # its python3 is 3.11: the aarch64 wheels below are for it
DEBIAN_MIRROR = "http://deb.debian.org/debian"
AARCH64_PLATFORMS = ["manylinux_2_28_aarch64", "manylinux_2_17_aarch64", "manylinux2014_aarch64"]
BINFMT = Path("/proc/sys/fs/binfmt_misc")
START_TIMEOUT = 300.0  # an emulated server imports TVM in about 6 s; a cold root takes longer

SUMMARY = """
import json, sys
from tvm import rpc
print(json.dumps(rpc.connect_tracker(sys.argv[1], int(sys.argv[2])).summary()))
"""


def summary(python: Path, tracker: str, timeout: float = 30.0) -> dict[str, object]:
    """The tracker's summary (queue_info, server_info), asked by `python`'s TVM."""
    host, _, port = tracker.rpartition(":")
    out = proc.run([python, "-c", SUMMARY, host, port], timeout=timeout).stdout
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    if not lines:
        raise ProcessError(f"RPC tracker {tracker} gave no summary:\n{out[-600:]}")
    data: dict[str, object] = json.loads(lines[-1])
    return data


def free_devices(python: Path, tracker: str, key: str) -> int:
    queues = summary(python, tracker).get("queue_info") or {}
    assert isinstance(queues, dict)
    return int(queues.get(key, {}).get("free", 0))


def rpc_tools(vroot: Path, deps_venv: Path, python: str) -> Path:
    """site-packages with the tracker's packages, on top of the shared deps venv."""
    return venvs.extras(vroot, deps_venv, RPC_TOOLS, python=python)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Devices:
    """A tracker on a free loopback port and `count` servers registered under `key`; each
    server is `server_cmd` (a Python, or a command ending in one) running tvm.exec.rpc_server.
    Use as a context manager: on exit every process group is killed."""

    host_python: Path  # runs the tracker (with `tools` on its path) and asks its summary
    tools: Path
    server_cmd: list[str]
    count: int
    key: str
    logs: Path
    server_env: dict[str, str] = field(default_factory=dict)
    tracker: str = ""
    servers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _tracker_proc: subprocess.Popen[bytes] | None = None

    def _spawn(self, cmd: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            return subprocess.Popen(
                cmd,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **env},
                start_new_session=True,  # its own group: killed with its session children
            )

    def __enter__(self) -> Devices:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _start(self) -> None:
        port = _free_port()
        self.tracker = f"127.0.0.1:{port}"
        cmd = [str(self.host_python), "-m", "tvm.exec.rpc_tracker", "--host", "127.0.0.1"]
        self._tracker_proc = self._spawn(
            [*cmd, "--port", str(port), "--port-end", str(port + 1)],
            self.logs / "tracker.log",
            {"PYTHONPATH": str(self.tools)},
        )
        self._wait(lambda: _reachable(port), "the tracker to listen", [self._tracker_proc])
        for i in range(self.count):
            cmd = [*self.server_cmd, "-m", "tvm.exec.rpc_server", "--tracker", self.tracker]
            own = _free_port()
            cmd += ["--key", self.key, "--host", "127.0.0.1", "--port", str(own)]
            cmd += ["--port-end", str(own + 1)]
            log = self.logs / f"device-{i}.log"
            self.servers.append(self._spawn(cmd, log, self.server_env))
        self._wait(
            lambda: free_devices(self.host_python, self.tracker, self.key) >= self.count,
            f"{self.count} device(s) to register under {self.key!r}",
            [self._tracker_proc, *self.servers],
        )

    def _wait(
        self, ready: Callable[[], bool], what: str, procs: list[subprocess.Popen[bytes]]
    ) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while not ready():
            dead = [p for p in procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                why = f"exited with code {dead[0].returncode}" if dead else "timed out"
                raise ProcessError(
                    f"waiting for {what}: {why}; the logs: {self.logs}/tracker.log, "
                    f"{self.logs}/device-*.log"
                )
            time.sleep(0.5)

    def busy(self, index: int) -> bool:
        """Whether server `index` serves a session now: it forks a process for each one,
        below the listening one it keeps (Linux /proc)."""
        return len(descendants(self.servers[index].pid)) > 1

    def kill_server(self, index: int) -> None:
        """Kill one server and its session processes at once (as a device dies)."""
        below = descendants(self.servers[index].pid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.servers[index].pid, signal.SIGKILL)
        for pid in below:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.servers[index].wait()

    def stop(self) -> None:
        for p in [*self.servers, *([self._tracker_proc] if self._tracker_proc else [])]:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def descendants(pid: int) -> list[int]:
    """The processes below `pid` (the children of each of its threads, theirs, ...)."""
    kids: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            kids += [int(k) for k in (task / "children").read_text().split()]
    return kids + [d for k in kids for d in descendants(k)]


def _reachable(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


# --- the emulated aarch64 root ------------------------------------------------------------


def check_emulation() -> None:
    """Usage errors for what the emulated lane needs and this machine lacks."""
    if platform.system() != "Linux":
        raise UsageError("the emulated aarch64 devices need Linux (qemu user mode, chroot)")
    if os.geteuid() != 0:
        raise UsageError("the emulated aarch64 devices need root (debootstrap and chroot)")
    missing = [t for t in ("qemu-aarch64-static", "debootstrap") if shutil.which(t) is None]
    if missing:
        raise UsageError(
            f"not installed: {', '.join(missing)} (Debian: apt-get install qemu-user-static "
            "debootstrap binfmt-support)"
        )
    if not (BINFMT / "qemu-aarch64").is_file():
        if not (BINFMT / "register").exists():
            proc.run(["mount", "-t", "binfmt_misc", "binfmt_misc", BINFMT], check=False)
        if shutil.which("update-binfmts"):
            proc.run(["update-binfmts", "--enable", "qemu-aarch64"], check=False)
    if not (BINFMT / "qemu-aarch64").is_file():
        raise UsageError(
            "aarch64 programs cannot run here: qemu-aarch64 is not registered with binfmt_misc "
            "(as root: mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc; "
            "update-binfmts --enable qemu-aarch64)"
        )


def debian_root(cache_dir: Path) -> Path:
    """A minimal Debian arm64 root with python3 (debootstrap, once; kept in the cache)."""
    root = cache_dir / "emulated" / f"debian-{DEBIAN_SUITE}-arm64"
    if (root / ".tvmfork-ready").is_file():
        return root
    tmp = root.with_name(root.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    cmd = ["debootstrap", "--arch=arm64", "--variant=minbase", "--include=python3"]
    with ui.step(f"debootstrap a Debian {DEBIAN_SUITE} arm64 root (minutes, once)"):
        proc.stream(
            [*cmd, DEBIAN_SUITE, tmp, DEBIAN_MIRROR],
            cache_dir / "emulated" / "debootstrap.log",
            lambda line: None,
        )
    (tmp / ".tvmfork-ready").write_text("debootstrap done\n")
    shutil.rmtree(root, ignore_errors=True)
    tmp.rename(root)
    return root


def install_wheel(root: Path, wheel: Path, digest: str) -> str:
    """The aarch64 wheel and what it needs (pip here, for the root's Python 3.11 on aarch64)
    in a folder of the root; that folder as the root sees it (for PYTHONPATH)."""
    inside = f"/opt/tvmfork/{digest[:12]}"
    target = root / inside.lstrip("/")
    if (target / ".tvmfork-ready").is_file():
        return inside
    shutil.rmtree(target, ignore_errors=True)
    cmd = ["pip", "install", "--quiet", "--no-compile", "--target", str(target)]
    cmd += [f"--platform={p}" for p in AARCH64_PLATFORMS]
    cmd += ["--python-version", "3.11", "--implementation", "cp", "--only-binary=:all:"]
    with ui.step(f"install {wheel.name} in the arm64 root"):
        proc.run([sys.executable, "-m", *cmd, str(wheel), "psutil", "cloudpickle"])
    (target / ".tvmfork-ready").write_text(f"{wheel.name}\n")
    return inside


def root_python(root: Path, site: str) -> list[str]:
    """The command that runs the root's Python (aarch64, under qemu) with `site` on its path."""
    return ["chroot", str(root), "/usr/bin/env", f"PYTHONPATH={site}", "/usr/bin/python3"]


def check_root_tvm(root: Path, site: str, version: str) -> str:
    """The root's `import tvm`: a line naming the machine and version; an error unless the
    machine is aarch64 and the version `version`."""
    out = proc.run(
        [
            *root_python(root, site),
            "-c",
            "import platform, tvm; print(platform.machine(), tvm.__version__)",
        ],
        timeout=300,
    ).stdout.split()
    if out[-2:] != ["aarch64", version]:
        raise ProcessError(f"the arm64 root's TVM is {' '.join(out[-2:])}, not aarch64 {version}")
    return f"arm64 root: import tvm -> {version} on aarch64 (qemu user mode)"

"""Conformance on a device reached through TVM's RPC: which target and cross compiler a
device's name stands for, and whether the tracker can hand one out before any case runs.

Each case is still compiled here by its side's TVM; the worker links the library with the
cross compiler, takes a fresh session from the tracker, uploads and runs it there, and
compares with the reference computed here (worker.remote_vm).
"""

from __future__ import annotations

import json
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

from tvmfork.conformance import devices
from tvmfork.conformance.spec import Remote
from tvmfork.errors import ProcessError, UsageError


@dataclass(frozen=True)
class Device:
    target: str  # as the worker takes it: a JSON object or a target string
    cross_cc: str = ""
    needs_rpc: bool = False
    compile_only: bool = False  # CUDA: compiled here, each kernel assembled by nvcc; not run


CUDA_ARCHS = "sm_80,sm_89,sm_90"  # A100, L4/L40/RTX 40, H100/H200


DEVICES = {
    # 64-bit Arm Linux with NEON (every ARMv8-A core: Graviton, Jetson, Raspberry Pi 3 on)
    "aarch64": Device(
        json.dumps({"kind": "llvm", "mtriple": "aarch64-linux-gnu", "mattr": ["+neon"]}),
        "aarch64-linux-gnu-g++",
        needs_rpc=True,
    ),
    # NVIDIA GPUs, compile-only: the module compiled for the first architecture of
    # --cuda-archs and its kernels assembled for each one
    "cuda": Device("cuda", compile_only=True),
}


def cuda_target(archs: str) -> str:
    """The cuda target for the first of `archs` (sm_80,sm_90), checked; nvcc must exist."""
    names = [a.strip() for a in archs.split(",") if a.strip()]
    bad = [a for a in names if not (a.startswith("sm_") and a[3:].rstrip("af").isdigit())]
    if not names or bad:
        raise UsageError(f"--cuda-archs {archs}: give CUDA architectures, e.g. {CUDA_ARCHS}")
    if shutil.which("nvcc") is None:
        raise UsageError("--target cuda (compile-only) needs nvcc, the CUDA toolkit's compiler")
    return json.dumps({"kind": "cuda", "arch": names[0]})


def resolve(
    target: str, tracker: str | None, key: str | None, cross_cc: str | None
) -> tuple[str, Remote | None]:
    """The worker's target and the remote device, from the options; a usage error for a
    combination that cannot run."""
    device = DEVICES.get(target)
    if tracker is None:
        if key or cross_cc:
            raise UsageError("--rpc-key and --cross-cc need --rpc-tracker HOST:PORT")
        if device is not None and device.needs_rpc:
            raise UsageError(
                f"--target {target} runs on a device: give --rpc-tracker HOST:PORT and "
                "--rpc-key KEY (README: 'Conformance on aarch64 through RPC')"
            )
        return target, None
    host, sep, port = tracker.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise UsageError(f"--rpc-tracker {tracker}: give HOST:PORT, e.g. 127.0.0.1:9190")
    if not key:
        raise UsageError("--rpc-tracker needs --rpc-key KEY (the key its servers registered)")
    if target in ("host", "llvm") and device is None and cross_cc is None:
        cross_cc = ""  # a device like this machine: the default compiler links for it
    compiler = cross_cc if cross_cc is not None else (device.cross_cc if device else "")
    if compiler and shutil.which(compiler) is None:
        raise UsageError(
            f"the cross compiler {compiler} is not installed (Debian: apt-get install "
            f"{'g++-aarch64-linux-gnu' if 'aarch64' in compiler else compiler})"
        )
    return (device.target if device else target), Remote(tracker, key, compiler)


def preflight(remote: Remote, python: Path, timeout: float = 30.0) -> str:
    """The tracker's devices for the key, as a line; a usage error when the tracker does not
    answer or has no server under the key (else every case would fail alike on both sides
    and the run would gate nothing)."""
    host, _, port = remote.tracker.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise UsageError(f"RPC tracker {remote.tracker} is unreachable: {exc}") from exc
    try:
        queues = devices.summary(python, remote.tracker, timeout).get("queue_info") or {}
    except (ProcessError, ValueError) as exc:
        raise UsageError(f"RPC tracker {remote.tracker} gave no summary: {exc}") from exc
    assert isinstance(queues, dict)
    if remote.key not in queues:
        keys = ", ".join(sorted(queues)) or "none"
        raise UsageError(
            f"RPC tracker {remote.tracker} has no device under key {remote.key!r} "
            f"(its keys: {keys})"
        )
    q = queues[remote.key]
    return f"RPC tracker {remote.tracker}, key {remote.key}: {q.get('free', 0)} free device(s)"

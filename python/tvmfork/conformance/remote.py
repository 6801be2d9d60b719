"""Where a conformance run's cases run: the target a `--target` name stands for
(`casework.targets.TARGETS`), on this machine, on a device reached through TVM's RPC (with
its cross compiler), or compile-only; and whether the tracker can hand a device out before
any case runs.

Each case is still compiled here by its side's TVM; the worker links the library with the
cross compiler, takes a fresh session from the tracker, uploads and runs it there, and
compares with the reference computed here (casework.backends.remote_vm).
"""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

from tvmfork.conformance import devices
from tvmfork.conformance.casework.spec import Remote, RunConfig
from tvmfork.conformance.casework.targets import CUDA_ARCHS, TARGETS
from tvmfork.errors import ProcessError, UsageError


def cuda_archs(archs: str) -> tuple[str, ...]:
    """`--cuda-archs` (sm_80,sm_90) checked; nvcc must exist to assemble for them."""
    names = tuple(a.strip() for a in archs.split(",") if a.strip())
    bad = [a for a in names if not (a.startswith("sm_") and a[3:].rstrip("af").isdigit())]
    if not names or bad:
        example = ",".join(CUDA_ARCHS)
        raise UsageError(f"--cuda-archs {archs}: give CUDA architectures, e.g. {example}")
    if shutil.which("nvcc") is None:
        raise UsageError("--target cuda (compile-only) needs nvcc, the CUDA toolkit's compiler")
    return names


def resolve(
    target: str,
    tracker: str | None,
    key: str | None,
    cross_cc: str | None,
    archs: str = ",".join(CUDA_ARCHS),
) -> RunConfig:
    """The run configuration's target and device from the options (a name of
    `targets.TARGETS`, or a target string TVM takes, which runs here); a usage error for a
    combination that cannot run."""
    named = TARGETS.get(target)
    if named is not None and named.runs == "assemble":
        if tracker or key or cross_cc:
            raise UsageError(f"--target {target} is compile-only here: no --rpc-tracker")
        names = cuda_archs(archs)
        return RunConfig(
            target=json.dumps({"kind": named.worker, "arch": names[0]}), assemble=names
        )
    worker = named.worker if named is not None else target
    if tracker is None:
        if key or cross_cc:
            raise UsageError("--rpc-key and --cross-cc need --rpc-tracker HOST:PORT")
        if named is not None and named.runs == "rpc":
            raise UsageError(
                f"--target {target} runs on a device: give --rpc-tracker HOST:PORT and "
                "--rpc-key KEY (docs/conformance.md: 'On other targets')"
            )
        return RunConfig(target=worker)
    host, sep, port = tracker.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise UsageError(f"--rpc-tracker {tracker}: give HOST:PORT, e.g. 127.0.0.1:9190")
    if not key:
        raise UsageError("--rpc-tracker needs --rpc-key KEY (the key its servers registered)")
    # a device like this machine (llvm, host, portable, a target string): the default
    # compiler links for it
    compiler = cross_cc if cross_cc is not None else (named.cross_cc if named else "")
    if compiler and shutil.which(compiler) is None:
        raise UsageError(
            f"the cross compiler {compiler} is not installed (Debian: apt-get install "
            f"{'g++-aarch64-linux-gnu' if 'aarch64' in compiler else compiler})"
        )
    return RunConfig(target=worker, remote=Remote(tracker, key, compiler))


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

"""A side's test server: run by a side venv's Python as a script (it imports nothing of
tvmfork), it imports torch and TVM once and then runs each pytest job it is sent in a process
forked from that state, so a job costs its tests, not the seconds of importing them.

Each job still runs alone: a fresh fork of the server (which never runs a test itself), in its
own session and process group, its output in its own log, killed as a group past its timeout.
A crash of one job is that job's result.

Protocol (one JSON object a line): the server writes {"ready": [...], "missing": [...]} once
its imports are done; it reads jobs {"id", "args", "log", "timeout"} on stdin and writes
{"id", "code", "timed_out", "seconds"} as each job ends, `code` as `subprocess` gives it
(negative: the signal). At the end of its input it waits for its jobs and exits.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import selectors
import signal
import sys
import time
import traceback

# What the regression modules import, and what torch.export's first call imports (a second
# and a half of each test module's time otherwise); each that this venv lacks is left out.
# Nothing here starts a thread that a fork would lose (onnxruntime's import does: not here).
PRELOAD = (
    "numpy",
    "pytest",
    "torch",
    "torch.export",
    "torch._dynamo",
    "torch._functorch.aot_autograd",
    "torch._export",
    "tvm",
    "tvm.relax",
    "tvm.relax.frontend.torch",
    "tvm.relax.frontend.onnx",
    "onnx",
)


def _preload(names: list[str]) -> tuple[list[str], list[str]]:
    ready, missing = [], []
    for name in names:
        try:
            importlib.import_module(name)
            ready.append(name)
        except Exception:  # an import that fails here fails in the test too
            missing.append(name)
    return ready, missing


def _child(args: list[str], log: str) -> None:
    """In the forked process: the job's pytest run, its output to its log; never returns."""
    code = 3
    try:
        os.setsid()
        out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        import pytest

        code = int(pytest.main(args))
    except BaseException:  # reported in the job's log, as exit 3
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _status(status: int) -> int:
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _say(obj: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def serve() -> None:
    ready, missing = _preload(list(PRELOAD))
    _say({"ready": ready, "missing": missing})
    running: dict[int, tuple[str, float, float]] = {}  # pid -> (id, start, deadline)
    timed_out: set[int] = set()
    buf, open_input = b"", True
    sel = selectors.DefaultSelector()
    sel.register(sys.stdin.fileno(), selectors.EVENT_READ)
    try:
        while open_input or running:
            if open_input and sel.select(timeout=0.05):
                chunk = os.read(sys.stdin.fileno(), 65536)
                if not chunk:
                    open_input = False
                    sel.unregister(sys.stdin.fileno())
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if not line.strip():
                        continue
                    job = json.loads(line)
                    sys.stdout.flush()
                    sys.stderr.flush()
                    pid = os.fork()
                    if pid == 0:
                        _child(job["args"], job["log"])
                    now = time.monotonic()
                    running[pid] = (job["id"], now, now + float(job["timeout"]))
            elif not open_input:
                time.sleep(0.05)
            now = time.monotonic()
            for pid, (job_id, start, deadline) in list(running.items()):
                done, status = os.waitpid(pid, os.WNOHANG)
                if done == 0:
                    if now > deadline and pid not in timed_out:
                        timed_out.add(pid)
                        with contextlib.suppress(ProcessLookupError):
                            os.killpg(pid, signal.SIGKILL)
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGKILL)  # killed before its setsid
                    continue
                del running[pid]
                _say(
                    {
                        "id": job_id,
                        "code": _status(status),
                        "timed_out": pid in timed_out,
                        "seconds": round(now - start, 2),
                    }
                )
    finally:
        for pid in running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    serve()

"""Runs conformance cases on each side (stock, fork), each case isolated from the others.

Each side has one worker process (`worker.py` under that side's interpreter) that runs cases
one at a time; a case that crashes the worker or outlives its time limit is charged to that
case alone (with the stage it was in), the worker is replaced, and the next case goes on.
One worker per side (not one process per case) keeps TVM's and torch's import cost, seconds
a case, out of a suite of two thousand cases.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from tvmfork.conformance.casework import bundle, pipe
from tvmfork.conformance.casework.spec import Message, RunConfig, Spec
from tvmfork.errors import ProcessError

WORKER = Path(__file__).with_name("worker.py")
START_TIMEOUT = 300.0  # importing tvm and torch in a cold venv
SEGFAULT_BANNER = b"Segfault encountered"  # what tvm-ffi's SIGSEGV handler prints first


@dataclass(frozen=True)
class CaseSpec:
    """One case of a suite: `spec` is what the worker gets, `timeout` its limit in seconds;
    a non-empty `skip` says why it is not run."""

    suite: str
    name: str
    spec: Spec
    timeout: float
    skip: str = ""

    def on_side(self, side: str, sides: list[str]) -> CaseSpec:
        """The case as `side`'s worker runs it. A torch case's anchors beside PyTorch eager
        (ONNX Runtime, torch.compile) are timed in the fork's worker only, where there is
        one: the speed table's ratios to them are the fork's, and each costs an export or a
        compile per side."""
        if side == "fork" or "fork" not in sides or self.spec.kind != "torch":
            return self
        return replace(self, spec=replace(self.spec, ort=False, inductor=False))


@dataclass
class Result:
    """What one side did with one case. status: ok, wrong (ran, different result), error
    (stopped with an error at `stage`), crash, timeout, or not run."""

    suite: str
    case: str
    side: str
    status: str
    stage: str
    error: str = ""
    times: dict[str, float] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)  # e.g. ort_error: why ORT was not timed

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    KEYS = ("suite", "case", "side", "status", "stage", "error")

    def to_json(self) -> dict[str, Any]:
        """One flat record (a line of results.jsonl): the fixed keys, then each time (a
        number) and each note (a string)."""
        return {
            "suite": self.suite,
            "case": self.case,
            "side": self.side,
            "status": self.status,
            "stage": self.stage,
            "error": self.error,
            # 4 significant digits: a relative error of 1e-6 must not round to 0
            **{k: float(f"{v:.4g}") for k, v in self.times.items()},
            **self.notes,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Result:
        """The inverse of `to_json`: numbers are times, other strings notes."""
        rest = {k: v for k, v in d.items() if k not in cls.KEYS}
        times = {
            k: float(v)
            for k, v in rest.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        }
        notes = {k: str(v) for k, v in rest.items() if k not in times}
        suite, case, side, status, stage, error = (str(d.get(k, "")) for k in cls.KEYS)
        return cls(suite, case, side, status, stage, error, times, notes)


class Worker:
    """A worker process for one side: `run` sends it a case with the run's configuration and
    waits for the result. `ready` is what the worker said once it had imported TVM (its
    version, `tvm`, and the folder it was imported from, `tvm_file`)."""

    def __init__(self, side: str, python: Path, log: Path, config: RunConfig) -> None:
        self.side = side
        self.python = python
        self.log_path = log
        self.config = config
        self.proc: subprocess.Popen[bytes] | None = None
        self.buf = bytearray()
        self.log: IO[bytes] | None = None
        self.ready: dict[str, Any] = {}

    def _start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [str(self.python), "-u", str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **self.config.worker_env()},
            start_new_session=True,  # its own process group: a timeout kills its children too
        )
        self.buf = bytearray()
        line = self._read_line(time.monotonic() + START_TIMEOUT)
        self.ready = json.loads(line) if line is not None else {}
        if not self.ready.get("ready"):
            code = self.stop()
            raise ProcessError(
                f"the {self.side} conformance worker did not start ({self.python}, exit "
                f"{code}); its output is in {self.log_path}:\n    {self._log_tail()}"
            )

    def _read_line(self, deadline: float) -> bytes | None:
        """The next protocol line; None at EOF or when the deadline passes."""
        assert self.proc is not None
        return pipe.read_line(self.proc, self.buf, deadline)

    def _log_since(self, since: int) -> bytes:
        """What the worker wrote to stderr after offset `since`."""
        try:
            with self.log_path.open("rb") as fh:
                fh.seek(since)
                return fh.read()
        except OSError:
            return b""

    def _log_tail(self, since: int = 0) -> str:
        """The last line of the worker's stderr written after offset `since`."""
        text = self._log_since(since).decode(errors="replace")
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        return lines[-1][:400] if lines else ""

    def _segfaulted(self, since: int) -> bool:
        return SEGFAULT_BANNER in self._log_since(since)

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        code = pipe.stop(self.proc)
        self.proc = None
        if self.log is not None:
            self.log.close()
            self.log = None
        return code

    def run(self, case: CaseSpec) -> Result:
        if self.proc is None:
            self._start()
        assert self.proc is not None and self.proc.stdin is not None
        since = self.log_path.stat().st_size
        try:
            config = self.config
            if config.bundle:  # each case in its own folder of the bundle
                where = bundle.case_folder(self.side, case.suite, case.name)
                config = replace(config, bundle=str(Path(config.bundle) / where))
            message = Message(config, case.spec).to_json()
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # it died: read_line sees EOF
        deadline = time.monotonic() + case.timeout
        stage = "load"
        while True:
            line = self._read_line(deadline)
            if line is None:
                timed_out = self.proc.poll() is None
                code = self.stop()
                if timed_out and not self._segfaulted(since):
                    why = f"no result after {case.timeout:.0f} s"
                    return Result(case.suite, case.name, self.side, "timeout", stage, why)
                if timed_out:
                    # TVM's segfault handler symbolizes a backtrace of libtvm before the process
                    # dies, which can outlast the limit: a crash all the same.
                    why = "worker killed by SIGSEGV (its backtrace was still printing at the limit)"
                    return Result(case.suite, case.name, self.side, "crash", stage, why)
                why = _died(code, self._log_tail(since))
                return Result(case.suite, case.name, self.side, "crash", stage, why)
            msg = json.loads(line)
            if "stage" in msg:
                stage = msg["stage"]
            elif "result" in msg:
                record = {**msg["result"], "suite": case.suite, "case": case.name}
                return Result.from_json({**record, "side": self.side})


def _died(code: int | None, last: str) -> str:
    if code is not None and code < 0:
        try:
            what = f"killed by {signal.Signals(-code).name}"
        except ValueError:
            what = f"killed by signal {-code}"
    else:
        what = f"exited with code {code}"
    return f"worker {what}" + (f": {last}" if last else "")


def run_cases(
    cases: list[CaseSpec],
    sides: dict[str, Path],
    log_dir: Path,
    config: RunConfig,
    on_case: Callable[[int, CaseSpec, dict[str, Result]], None],
    jobs: int = 1,
    on_ready: Callable[[str, dict[str, Any]], None] | None = None,
) -> list[Result]:
    """Every case on every side, each sent with `config`; `on_case(index, case, results by
    side)` after each case, in order; `on_ready(side, what its worker said)` each time a
    worker starts. `jobs` workers run at once, shared out over the sides (2 with two sides: one
    each; 4: two each, taking the side's cases in turn, e.g. one per device of an RPC
    tracker); with more than one, timings compete for the cores."""
    per_side = max(1, jobs // len(sides))
    workers = {
        s: [
            Worker(s, py, log_dir / f"{s}{f'-{k}' if k else ''}.log", config)
            for k in range(per_side)
        ]
        for s, py in sides.items()
    }
    done: list[dict[str, Result]] = [{} for _ in cases]
    lock = threading.Condition()
    reported = 0
    next_case = dict.fromkeys(sides, 0)

    def one(side: str, i: int, worker: Worker) -> None:
        nonlocal reported
        case = cases[i]
        if case.skip:
            r = Result(case.suite, case.name, side, "not run", "", case.skip)
        else:
            r = worker.run(case.on_side(side, list(sides)))
            if on_ready is not None and worker.ready:
                on_ready(side, worker.ready)
        with lock:
            done[i][side] = r
            while reported < len(cases) and len(done[reported]) == len(sides):
                on_case(reported, cases[reported], done[reported])
                reported += 1
            lock.notify_all()

    def worker_loop(side: str, worker: Worker) -> None:
        while True:
            with lock:
                i = next_case[side]
                next_case[side] += 1
            if i >= len(cases):
                return
            one(side, i, worker)

    try:
        if jobs > 1:
            errors: list[BaseException] = []

            def guarded(side: str, worker: Worker) -> None:
                try:
                    worker_loop(side, worker)
                except BaseException as exc:  # re-raised in the main thread
                    errors.append(exc)

            threads = [
                threading.Thread(target=guarded, args=(s, w), daemon=True)
                for s, ws in workers.items()
                for w in ws
            ]
            for t in threads:
                t.start()
            for t in threads:
                while t.is_alive():
                    t.join(0.5)
            if errors:
                raise errors[0]
        else:
            for i in range(len(cases)):
                for side in sides:
                    one(side, i, workers[side][0])
    finally:
        for ws in workers.values():
            for w in ws:
                w.stop()
    return [d[s] for d in done for s in sides if s in d]  # in case order, sides in order

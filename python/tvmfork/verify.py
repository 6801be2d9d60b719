"""`tvmfork verify`: each patch's regression tests fail on stock TVM and pass on the fork.

Both sides run in their own venv, each a pytest subprocess writing a JUnit XML report, so a
crash on one side (BUGS.md section 0 segfaults) is a result, not the end of the run. The
verdict of a side is read per test from that report, not from pytest's exit code: only a test
whose own check fails (an assertion, or an error raised inside TVM) shows the bug. A test that
cannot run (collection or fixture errors, an import or name missing in the test itself or in a
helper module under tests/, a key or global function the test looks up that this TVM lacks, a
timeout, a process killed from outside) is ERROR or TIMEOUT and proves nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import tempfile
import threading
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from queue import Empty, Queue
from typing import Any

from tvmfork import pages, proc, ui
from tvmfork.errors import ProcessError
from tvmfork.series import Patch, Series

# Seconds for one side's run of a patch's tests (`verify --timeout`).
DEFAULT_TIMEOUT = 1800.0
# Side outcomes, worst first where a run mixes them.
PASS, FAIL, CRASH, ERROR, TIMEOUT = "pass", "FAIL", "CRASH", "ERROR", "TIMEOUT"
# Raised by the test's own code, these say the test could not run, not that TVM misbehaved.
_HARNESS_ERRORS = frozenset(
    {"ImportError", "ModuleNotFoundError", "NameError", "SyntaxError", "IndentationError"}
)
# Raised in the test file itself (not inside TVM), these mean the test calls what this TVM
# lacks (a fork-only keyword or function), which is not the bug either.
_MISSING_API_ERRORS = frozenset({"TypeError", "AttributeError"})
# Signals that a crash of TVM raises; others (SIGKILL: the OOM killer, SIGTERM, SIGINT) come
# from outside the test.
_CRASH_SIGNALS = frozenset(
    {signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE, signal.SIGILL}
)
# pytest's last traceback line: where the exception was raised (a .py file, or TVM's C++ for
# an error from the FFI: "/project/src/relax/op/op_common.h:333: TypeError").
_LOCATION_RE = re.compile(r"^(?P<file>[^\s:][^:\n]*):\d+: (?P<exc>[\w.]+)$", re.M)
# pytest's line for each frame of a traceback, outermost first: "path:12: " (the test),
# "path:12: in function", and last where it was raised, "path:12: KeyError".
_FRAME_RE = re.compile(r"^(?P<file>[^\s:][^:\n]*):\d+:(?: in \S+| [\w.]+)? *$", re.M)
# The modules through which a test looks a name up in TVM: a map's or an attribute
# dictionary's key (`func.attrs["name"]`), a registered global function. A lookup that fails
# there, called straight from test code, is the test asking for what this TVM lacks.
_LOOKUP_MODULES = ("tvm_ffi/container.py", "tvm_ffi/registry.py", "tvm/ir/attrs.py")
_LOOKUP_ERRORS = frozenset({"KeyError", "ValueError", "IndexError", "AttributeError"})


@dataclass(frozen=True)
class TestResult:
    """One test of a side's run: its node id, outcome (PASS, FAIL, ERROR, or "skipped") and
    why (the exception's first line)."""

    node: str
    outcome: str
    reason: str = ""


@dataclass(frozen=True)
class Outcome:
    """One side's run of a patch's regression tests."""

    status: str
    tests: tuple[TestResult, ...] = ()
    tail: str = ""
    detail: str = ""

    @property
    def word(self) -> str:
        return f"{self.status} ({self.detail})" if self.detail else self.status

    @property
    def failed(self) -> bool:
        """The bug showed: a test's own check failed, or TVM crashed."""
        return self.status in (FAIL, CRASH)

    @property
    def passed(self) -> bool:
        return self.status == PASS


def _exception_of(message: str, text: str) -> tuple[str, str]:
    """The exception's type name and the file the traceback ends in, from a JUnit failure."""
    located = list(_LOCATION_RE.finditer(text))
    if located:
        last = located[-1]
        return last.group("exc").rsplit(".", 1)[-1], last.group("file")
    head = message.split(":", 1)[0].strip()
    return head.rsplit(".", 1)[-1], ""


def _in_tests(file: str, test_file: str) -> bool:
    """`file` is the test file or a helper module under a tests/ folder."""
    path = Path(file)
    return path.name == Path(test_file).name or "tests" in path.parts[:-1]


def _lookup_from_test(text: str, test_file: str) -> bool:
    """The traceback leaves test code (the test or a helper under tests/) last for one of
    TVM's lookup modules: the test's own lookup of a key or function failed there."""
    frames = [m.group("file") for m in _FRAME_RE.finditer(text)]
    last = max((i for i, f in enumerate(frames) if _in_tests(f, test_file)), default=None)
    if last is None or last + 1 >= len(frames):
        return False
    return frames[last + 1].replace("\\", "/").endswith(_LOOKUP_MODULES)


def classify_failure(message: str, text: str, test_file: str) -> str:
    """FAIL when the failure is the test's own check (or an error from inside TVM), ERROR when
    the test could not run as written on this TVM: a harness error, a keyword, attribute or
    function missing where the test (or its helper under tests/) calls it, or a key the test
    looks up in one of TVM's maps (a fork-only attribute) or a global function it lacks."""
    exc, where = _exception_of(message, text)
    if exc in _HARNESS_ERRORS:
        return ERROR
    in_test = bool(where) and _in_tests(where, test_file)
    if exc in _MISSING_API_ERRORS and (in_test or not where):
        return ERROR
    if exc in _LOOKUP_ERRORS and _lookup_from_test(text, test_file):
        return ERROR
    return FAIL


def read_junit(xml_text: str) -> list[TestResult]:
    """The per-test results of a pytest JUnit XML report."""
    results = []
    root = ET.fromstring(xml_text)
    for case in root.iter("testcase"):
        file = case.get("file") or case.get("classname", "").replace(".", "/") + ".py"
        node = f"{case.get('classname', '')}::{case.get('name', '')}"
        failure, error, skipped = case.find("failure"), case.find("error"), case.find("skipped")
        if error is not None:
            results.append(TestResult(node, ERROR, error.get("message", "")[:200]))
        elif failure is not None:
            msg = failure.get("message", "")
            outcome = classify_failure(msg, failure.text or "", file)
            results.append(TestResult(node, outcome, msg.splitlines()[0][:200] if msg else ""))
        elif skipped is not None:
            results.append(TestResult(node, "skipped", skipped.get("message", "")[:200]))
        else:
            results.append(TestResult(node, PASS))
    return results


def side_outcome(code: int, results: list[TestResult], tail: str) -> Outcome:
    """A side's status from pytest's exit code and its per-test results."""
    if code < 0 or code > 128:
        sig = -code if code < 0 else code - 128
        try:
            name = signal.Signals(sig)
        except ValueError:
            return Outcome(ERROR, tuple(results), tail, f"exit {code}")
        status = CRASH if name in _CRASH_SIGNALS else ERROR
        return Outcome(status, tuple(results), tail, name.name)
    ran = [r for r in results if r.outcome != "skipped"]
    errors = [r for r in ran if r.outcome == ERROR]
    if errors:
        return Outcome(ERROR, tuple(results), tail, f"{errors[0].node}: {errors[0].reason}")
    if code not in (0, 1) or not ran:
        why = "no test ran" if not ran else f"pytest exit {code}"
        return Outcome(ERROR, tuple(results), tail, why)
    if any(r.outcome == FAIL for r in ran):
        return Outcome(FAIL, tuple(results), tail)
    return Outcome(PASS, tuple(results), tail)


@dataclass(frozen=True)
class Job:
    """One side's run of some tests: `key` names it in the results. `pythonpath`: a folder
    put before the venv's packages (an overlay of TVM's Python package, `alone`)."""

    key: str
    python: Path
    tests: tuple[str, ...]
    pythonpath: str = ""


SERVER = Path(__file__).with_name("testserver.py")


_Reply = tuple["_Server", "dict[str, Any] | None"]


class _Server:
    """A side's test server (`testserver.py`) under `python`: its replies go to `replies`."""

    def __init__(
        self, python: Path, cwd: Path, env: dict[str, str], log: Path, replies: Queue[_Reply]
    ):
        self.log = log
        self.proc = proc.spawn([python, SERVER], cwd=cwd, env=env, stderr_log=log)
        self.jobs: set[str] = set()
        threading.Thread(target=self._read, args=(replies,), daemon=True).start()

    def _read(self, replies: Queue[_Reply]) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with contextlib.suppress(json.JSONDecodeError):
                msg = json.loads(line)
                if "id" in msg:
                    replies.put((self, msg))
        replies.put((self, None))

    def send(self, key: str, args: list[str], log: Path, timeout: float) -> None:
        assert self.proc.stdin is not None
        self.jobs.add(key)
        job = {"id": key, "args": args, "log": str(log), "timeout": timeout}
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()

    def close(self, kill: bool) -> None:
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        if kill:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def _tail(path: Path, lines: int = 15) -> str:
    if not path.is_file():
        return ""
    text = path.read_text(errors="replace")
    return "\n".join(text.strip().splitlines()[-lines:])


def run_jobs(
    jobs: list[Job],
    repo_root: Path,
    env: dict[str, str],
    timeout: float,
    slots: int = 2,
    on_done: Callable[[Job, Outcome, float], None] | None = None,
) -> dict[str, Outcome]:
    """Run each job's tests with its side's Python, `slots` jobs at a time, each in a process
    of its own forked from the side's test server (torch and TVM imported once per side), and
    read each test's outcome. Past `timeout` seconds a job is killed: TIMEOUT."""
    results: dict[str, Outcome] = {}
    by_key = {j.key: j for j in jobs}
    # jobs not yet finished per server: a server none is left for is closed at once (`verify
    # --alone` makes one per overlay; kept, 70 of them filled the machine's memory)
    left = Counter((j.python, j.pythonpath) for j in jobs)
    pending = list(reversed(jobs))
    replies: Queue[_Reply] = Queue()
    servers: dict[tuple[Path, str], _Server] = {}  # one per interpreter and PYTHONPATH
    ok = False
    with tempfile.TemporaryDirectory(prefix="tvmfork-verify-") as tmp:
        files = {j.key: Path(tmp) / f"job{i}" for i, j in enumerate(jobs)}

        def finish(job: Job, outcome: Outcome, seconds: float) -> None:
            results[job.key] = outcome
            where = (job.python, job.pythonpath)
            left[where] -= 1
            if not left[where] and where in servers:
                servers.pop(where).close(kill=False)
            if on_done:
                on_done(job, outcome, seconds)

        try:
            running = 0
            while pending or running:
                while pending and running < slots:
                    job = pending.pop()
                    where = (job.python, job.pythonpath)
                    server = servers.get(where)
                    if server is None:
                        log = Path(tmp) / f"server{len(servers)}.log"
                        job_env = {**env, "PYTHONPATH": job.pythonpath} if job.pythonpath else env
                        server = servers[where] = _Server(
                            job.python, repo_root, job_env, log, replies
                        )
                    base = files[job.key]
                    args = ["-q", "-p", "no:cacheprovider", f"--junitxml={base}.xml"]
                    args += ["-o", "junit_family=xunit1", *job.tests]
                    server.send(job.key, args, base.with_suffix(".log"), timeout)
                    running += 1
                # the server enforces each job's timeout; this one is for the server itself
                server, msg = replies.get(timeout=timeout + 120)
                if msg is None:  # the server ended: its jobs still out are errors
                    why = f"the test server exited: {_tail(server.log, 5)}"
                    servers = {k: v for k, v in servers.items() if v is not server}
                    for key in sorted(server.jobs - results.keys()):
                        finish(by_key[key], Outcome(ERROR, (), "", why), 0.0)
                        running -= 1
                    continue
                if msg["id"] in results:  # a reply of a server already closed
                    continue
                job, base = by_key[msg["id"]], files[msg["id"]]
                running -= 1
                tail = _tail(base.with_suffix(".log"))
                if msg["timed_out"]:
                    outcome = Outcome(TIMEOUT, (), tail, f"over {timeout:.0f} s")
                else:
                    report = base.with_suffix(".xml")
                    tests = read_junit(report.read_text()) if report.is_file() else []
                    outcome = side_outcome(int(msg["code"]), tests, tail)
                finish(job, outcome, float(msg["seconds"]))
            ok = True
        except Empty as exc:
            raise ProcessError(f"a test server sent nothing for {timeout + 120:.0f} s") from exc
        finally:
            for server in servers.values():
                server.close(kill=not ok)
    return results


def run_tests(
    python: Path, tests: list[str], repo_root: Path, env: dict[str, str], timeout: float
) -> Outcome:
    """Run `tests` (pytest node ids) with `python`, reading each test's outcome."""
    job = Job("tests", python, tuple(tests))
    return run_jobs([job], repo_root, env, timeout)["tests"]


@dataclass(frozen=True)
class Row:
    patch: str
    tests: tuple[str, ...]
    stock: Outcome | None
    fork: Outcome | None
    reason: str = ""

    @property
    def test(self) -> str:
        return " ".join(self.tests)

    @property
    def verdict(self) -> str:
        if self.stock is None:
            return f"not run: {self.reason}"
        if self.fork is None:
            if self.stock.passed:
                return "NOT NEEDED: passes on stock"
            if self.stock.failed:
                return f"needed (stock {self.stock.word}); fork not run: {self.reason}"
            return f"UNPROVEN: stock {self.stock.word}; fork not run: {self.reason}"
        if self.stock.failed and self.fork.passed:
            return "ok: needed and sufficient"
        if self.stock.passed:
            return "NOT NEEDED: passes on stock"
        if not self.stock.failed:
            return f"UNPROVEN: stock {self.stock.word}"
        return f"BROKEN: fork {self.fork.word}"

    @property
    def ok(self) -> bool:
        return self.verdict.startswith("ok")


def chosen(series: Series, only: list[str] | None) -> list[Patch]:
    """The patches of `series` named in `only` (with or without ".patch"), all without it."""
    return [
        p
        for p in series.patches
        if not only or p.name in only or p.name.removesuffix(".patch") in only
    ]


def regression_tests(patch: Patch) -> list[str]:
    return [t for t in patch.trailers.get("Regression-Test", []) if t]


def verify(
    series: Series,
    repo_root: Path,
    stock_python: Path,
    fork_python: Path,
    included: set[str],
    only: list[str] | None = None,
    stock_only: dict[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[Row]:
    """Run each patch's regression tests on both sides. A patch not in `included` is not
    run, unless `stock_only` gives the reason its fork side is not run: then its stock side
    still shows whether the patch is needed."""
    env = {"PYTHONDONTWRITEBYTECODE": "1"}
    plans: list[tuple[Patch, tuple[str, ...], str | None]] = []  # patch, tests, why no fork
    jobs: list[Job] = []
    for p in chosen(series, only):
        tests = tuple(regression_tests(p))
        why: str | None = None
        if p.name not in included:
            why = (stock_only or {}).get(p.name)
            if why is None:
                plans.append((p, tests, "native patch: needs a source build"))
                continue
        plans.append((p, tests, why))
        jobs.append(Job(f"{p.name}/stock", stock_python, tests))
        if why is None:
            jobs.append(Job(f"{p.name}/fork", fork_python, tests))

    done = 0

    def progress(job: Job, outcome: Outcome, seconds: float) -> None:
        nonlocal done
        done += 1
        patch, side = job.key.rsplit("/", 1)
        ui.note(f"    [{done}/{len(jobs)}] {patch} {side}: {outcome.word} ({seconds:.0f} s)")

    results: dict[str, Outcome] = {}
    if jobs:
        patches = len({j.key.rsplit("/", 1)[0] for j in jobs})
        with ui.step(f"verify {patches} patch(es): {len(jobs)} test runs, 2 at a time"):
            results = run_jobs(jobs, repo_root, env, timeout, on_done=progress)
    rows = []
    for p, tests, why in plans:
        stock = results.get(f"{p.name}/stock")
        if stock is None:
            rows.append(Row(p.name, tests, None, None, why or ""))
        elif why is not None:
            rows.append(Row(p.name, tests, stock, None, why))
        else:
            rows.append(Row(p.name, tests, stock, results[f"{p.name}/fork"]))
    return rows


def unproven(rows: list[Row], against: bool = False) -> list[Row]:
    """The rows that prove nothing although both sides ran. Against another release, a patch
    upstream made unnecessary (stock passes) is news, not a failure."""
    bad = [r for r in rows if r.stock is not None and r.fork is not None and not r.ok]
    if against:
        bad = [r for r in bad if r.fork is not None and not r.fork.passed]
    return bad


def details(rows: list[Row]) -> str:
    """Each row's two sides: outcome and the tail of pytest's output."""
    out = []
    for r in rows:
        for side, o in (("stock", r.stock), ("the fork", r.fork)):
            out.append(
                f"\n--- {r.patch} on {side} ({o.word if o else '-'}):\n{o.tail if o else ''}"
            )
    return "\n".join(out)


def table(rows: list[Row]) -> str:
    data = [
        (r.patch, r.stock.status if r.stock else "-", r.fork.status if r.fork else "-", r.verdict)
        for r in rows
    ]
    return ui.columns(("patch", "stock", "fork", "verdict"), data)


# how a verdict reads in a release's table (the first matching prefix)
_KINDS = (
    ("ok", "needed"),
    ("needed (stock", "needed, not in the overlay"),
    ("NOT NEEDED", "absorbed"),
    ("BROKEN", "broken on the release"),
    ("UNPROVEN", "unproven"),
    ("not run", "not run"),
)


def kind(row: Row) -> str:
    """needed / needed, not in the overlay / absorbed / broken on the release / unproven /
    not run: what the row says about the stock release it ran against."""
    return pages.kind_of(row.verdict, _KINDS, "unproven")


def markdown(rows: list[Row], title: str, lines: list[str]) -> str:
    """A docs page (`pages`): `title`, the `lines` saying how it was made, a count per kind
    and one row per patch."""
    cells = [
        (
            r.patch,
            (
                r.stock.status if r.stock else "-",
                r.fork.status if r.fork else "-",
                kind(r),
                r.verdict,
            ),
        )
        for r in rows
    ]
    head = ("patch", "stock", "fork", pages.KIND, "verdict")
    return pages.render(title, lines, head, cells, [k for _, k in _KINDS])

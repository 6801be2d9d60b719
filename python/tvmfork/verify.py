"""`tvmfork verify`: each patch's regression tests fail on stock TVM and pass on the fork.

Both sides run in their own venv, each a pytest subprocess writing a JUnit XML report, so a
crash on one side (BUGS.md section 0 segfaults) is a result, not the end of the run. The
verdict of a side is read per test from that report, not from pytest's exit code: only a test
whose own check fails (an assertion, or an error raised inside TVM) shows the bug. A test that
cannot run (collection or fixture errors, an import or name missing in the test itself, a
timeout, a process killed from outside) is ERROR or TIMEOUT and proves nothing.
"""

from __future__ import annotations

import re
import signal
import tempfile
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tvmfork import proc, ui
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
_LOCATION_RE = re.compile(r"^(?P<file>[^\s:][^:]*):\d+: (?P<exc>[\w.]+)$", re.M)


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


def classify_failure(message: str, text: str, test_file: str) -> str:
    """FAIL when the failure is the test's own check (or an error from inside TVM), ERROR when
    the test could not run as written on this TVM."""
    exc, where = _exception_of(message, text)
    if exc in _HARNESS_ERRORS:
        return ERROR
    in_test = bool(where) and Path(where).name == Path(test_file).name
    if exc in _MISSING_API_ERRORS and (in_test or not where):
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


def run_tests(
    python: Path, tests: list[str], repo_root: Path, env: dict[str, str], timeout: float
) -> Outcome:
    """Run `tests` (pytest node ids) with `python`, reading each test's outcome."""
    with tempfile.TemporaryDirectory(prefix="tvmfork-verify-") as tmp:
        report = Path(tmp) / "junit.xml"
        cmd: list[str | Path] = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        cmd += [f"--junitxml={report}"]
        cmd += ["-o", "junit_family=xunit1", *tests]
        try:
            r = proc.run(cmd, cwd=repo_root, check=False, env=env, timeout=timeout)
        except proc.Timeout as exc:
            return Outcome(TIMEOUT, (), exc.tail, f"over {timeout:.0f} s")
        tail = "\n".join(r.stdout.strip().splitlines()[-15:])
        results = read_junit(report.read_text()) if report.is_file() else []
        return side_outcome(r.returncode, results, tail)


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
    rows = []
    env = {"PYTHONDONTWRITEBYTECODE": "1"}
    for p in series.patches:
        if only and p.name not in only and p.name.removesuffix(".patch") not in only:
            continue
        tests = regression_tests(p)
        if p.name not in included:
            reason = (stock_only or {}).get(p.name)
            if reason is None:
                rows.append(
                    Row(p.name, tuple(tests), None, None, "native patch: needs a source build")
                )
                continue
            with ui.step(f"verify {p.name} on stock only: {' '.join(tests)}"):
                stock = run_tests(stock_python, tests, repo_root, env, timeout)
            rows.append(Row(p.name, tuple(tests), stock, None, reason))
            continue
        with ui.step(f"verify {p.name}: {' '.join(tests)}"):
            # the two sides at once (separate venvs and processes): most of each is importing
            # torch and TVM, which a second core halves
            with ThreadPoolExecutor(max_workers=2) as pool:
                sides = [
                    pool.submit(run_tests, python, tests, repo_root, env, timeout)
                    for python in (stock_python, fork_python)
                ]
                stock, fork = (side.result() for side in sides)
        rows.append(Row(p.name, tuple(tests), stock, fork))
        ui.note(f"    stock: {stock.word}   fork: {fork.word}")
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
    head = ("patch", "stock", "fork", "verdict")
    data = [
        (r.patch, r.stock.status if r.stock else "-", r.fork.status if r.fork else "-", r.verdict)
        for r in rows
    ]
    widths = [max(len(x[i]) for x in [head, *data]) for i in range(4)]
    fmt = "  ".join(f"{{:{w}}}" for w in widths)
    lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*d) for d in data]
    return "\n".join(lines)

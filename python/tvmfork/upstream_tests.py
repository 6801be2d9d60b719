"""`tvmfork upstream-tests`: TVM's own test files, touched by the series, on stock and fork.

The test files come from the patched checkout (so the tests each patch adds are included);
both sides run the same files. A test that passes on stock and fails on the fork is a
regression; tests that fail on both sides (upstream's own breakage at the pin) are reported,
not blamed on the fork.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tvmfork import proc, ui, verify
from tvmfork.errors import UsageError, VerifyError
from tvmfork.series import Series, classify


def test_files(series: Series, only: list[str] | None = None) -> list[str]:
    files: list[str] = []
    for p in series.patches:
        if only and p.name not in only and p.name.removesuffix(".patch") not in only:
            continue
        for f in p.files:
            name = f.rsplit("/", 1)[-1]
            if classify(f) == "test" and name.startswith("test_") and f.endswith(".py"):
                files.append(f)
    return list(dict.fromkeys(files))


def run_side(python: Path, checkout: Path, files: list[str]) -> dict[str, str]:
    """Test id -> passed | failed | skipped, from pytest's JUnit XML.

    Each file runs in its own pytest process, as upstream's CI runs them: a test that leaves
    global state behind (a target scope, a registered function) must not fail the next file.
    """
    outcomes: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="tvmfork-upstream-") as tmp:
        for i, test_file in enumerate(files):
            report = Path(tmp) / f"junit-{i}.xml"
            proc.run(
                [
                    python,
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    f"--junitxml={report}",
                    # a file that cannot import on one side (it tests a new API) must not
                    # stop the others from running there
                    "--continue-on-collection-errors",
                    test_file,
                ],
                cwd=checkout,
                check=False,
                env={"PYTHONDONTWRITEBYTECODE": "1"},
            )
            if report.is_file():
                outcomes.update(_outcomes(report))
    return outcomes


def _outcomes(report: Path) -> dict[str, str]:
    """passed | failed | skipped per test: a failure of any kind (verify's FAIL or ERROR) is a
    failure here, where stock and fork are compared test by test."""
    words = {verify.PASS: "passed", "skipped": "skipped"}
    return {r.node: words.get(r.outcome, "failed") for r in verify.read_junit(report.read_text())}


@dataclass
class Comparison:
    stock: dict[str, str]
    fork: dict[str, str]
    regressions: list[str] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)
    broken_on_both: list[str] = field(default_factory=list)
    new_failing: list[str] = field(default_factory=list)
    """Fail on the fork and did not run on stock: the series' own tests, broken."""

    def count(self, side: dict[str, str], outcome: str) -> int:
        return sum(1 for v in side.values() if v == outcome)


def compare(stock: dict[str, str], fork: dict[str, str]) -> Comparison:
    """Sort the fork's outcomes against stock's. A test that passed on stock and did not run
    on the fork counts as a regression; one that stock could not even collect (a test of a
    new API) and that fails on the fork is a failure of the series' own tests."""
    c = Comparison(stock, fork)
    for test_id, outcome in sorted(fork.items()):
        before = stock.get(test_id)
        if outcome == "failed" and before == "passed":
            c.regressions.append(test_id)
        elif outcome == "failed" and before is None:
            c.new_failing.append(test_id)
        elif outcome == "failed":
            c.broken_on_both.append(test_id)
        elif outcome == "passed" and before in ("failed", None):
            c.fixed.append(test_id)
    missing = [t for t, o in stock.items() if t not in fork and o == "passed"]
    c.regressions += [f"{t} (not run on the fork)" for t in missing]
    return c


def summary(c: Comparison) -> str:
    lines = []
    for label, side in (("stock", c.stock), ("fork", c.fork)):
        lines.append(
            f"  {label:5}: {c.count(side, 'passed')} passed, "
            f"{c.count(side, 'failed')} failed, {c.count(side, 'skipped')} skipped"
        )
    lines.append(f"  fixed or added by the series (pass on the fork, not on stock): {len(c.fixed)}")
    lines.append(f"  failing on both (upstream's, at the pin): {len(c.broken_on_both)}")
    lines += [f"    {t}" for t in c.broken_on_both]
    lines.append(f"  FAILING, new with the series (not run on stock): {len(c.new_failing)}")
    lines += [f"    {t}" for t in c.new_failing]
    lines.append(f"  REGRESSIONS (pass on stock, fail on the fork): {len(c.regressions)}")
    lines += [f"    {t}" for t in c.regressions]
    return "\n".join(lines)


def files_to_run(series: Series, checkout: Path, only: list[str], also: list[str]) -> list[str]:
    """The test files of the patches (all, or `only`), and `also`'s, in a checkout that carries
    the series as patches/ has it."""
    from tvmfork.patchflow import series_applied

    if not series_applied(checkout, series):
        raise UsageError(
            f"{checkout} does not carry the series as it is in patches/; run "
            "`tvmfork apply` (or `tvmfork export` if the checkout is newer)"
        )
    files = test_files(series, only or None)
    for extra in also:
        if not (checkout / extra).exists():
            raise UsageError(f"--also {extra}: no such file or folder in {checkout}")
        files.append(extra)
    return files


def run(stock: Path, fork: Path, checkout: Path, files: list[str]) -> Comparison:
    """`files` on both sides; a VerifyError where a test fails on the fork and not on stock."""
    with ui.step("upstream tests on stock"):
        before = run_side(stock, checkout, files)
    with ui.step("upstream tests on the fork"):
        after = run_side(fork, checkout, files)
    result = compare(before, after)
    if not after:
        raise VerifyError("the fork side produced no test results")
    bad = result.regressions + result.new_failing
    if bad:
        raise VerifyError(
            f"{summary(result)}\n{len(bad)} upstream test(s) fail on the fork and not on stock"
        )
    return result

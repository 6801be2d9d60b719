"""`tvmfork verify`: each patch's regression test fails on stock TVM and passes on the fork.

Both sides run in their own venv, each a subprocess, so a crash on one side (BUGS.md section
0 segfaults) is a result, not the end of the run.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path

from tvmfork import proc, ui
from tvmfork.series import Series

# pytest exit codes: 0 all passed, 1 some failed; 2-5 mean the run itself went wrong
# (interrupted, internal error, usage error, nothing collected) and prove nothing.
PASSED, FAILED = 0, 1


@dataclass(frozen=True)
class Outcome:
    code: int
    tail: str

    @property
    def word(self) -> str:
        if self.code == PASSED:
            return "pass"
        if self.code == FAILED:
            return "FAIL"
        if self.code < 0 or self.code > 128:
            sig = -self.code if self.code < 0 else self.code - 128
            try:
                return f"CRASH ({signal.Signals(sig).name})"
            except ValueError:
                return f"CRASH ({self.code})"
        return f"ERROR (pytest exit {self.code})"

    @property
    def failed(self) -> bool:
        """The bug showed: tests failed or the interpreter crashed (not a broken run)."""
        return self.code == FAILED or self.code < 0 or self.code > 128


@dataclass(frozen=True)
class Row:
    patch: str
    test: str
    stock: Outcome | None
    fork: Outcome | None
    reason: str = ""

    @property
    def verdict(self) -> str:
        if self.stock is None:
            return f"not run: {self.reason}"
        if self.fork is None:
            if self.stock.code == PASSED:
                return "NOT NEEDED: passes on stock"
            return f"needed (stock {self.stock.word}); fork not run: {self.reason}"
        if self.stock.failed and self.fork.code == PASSED:
            return "ok: needed and sufficient"
        if self.stock.code == PASSED:
            return "NOT NEEDED: passes on stock"
        return "BROKEN: fails on the fork" if self.stock.failed else "BROKEN: stock run errored"

    @property
    def ok(self) -> bool:
        return self.verdict.startswith("ok")


def run_test(python: Path, test: str, repo_root: Path, env: dict[str, str]) -> Outcome:
    r = proc.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", test],
        cwd=repo_root,
        check=False,
        env=env,
    )
    return Outcome(r.returncode, "\n".join(r.stdout.strip().splitlines()[-15:]))


def verify(
    series: Series,
    repo_root: Path,
    stock_python: Path,
    fork_python: Path,
    included: set[str],
    only: list[str] | None = None,
    stock_only: dict[str, str] | None = None,
) -> list[Row]:
    """Run each patch's regression test on both sides. A patch not in `included` is not
    run, unless `stock_only` gives the reason its fork side is not run: then its stock side
    still shows whether the patch is needed."""
    rows = []
    env = {"PYTHONDONTWRITEBYTECODE": "1"}
    for p in series.patches:
        if only and p.name not in only and p.name.removesuffix(".patch") not in only:
            continue
        test = p.trailer("Regression-Test") or ""
        if p.name not in included:
            reason = (stock_only or {}).get(p.name)
            if reason is None:
                rows.append(Row(p.name, test, None, None, "native patch: needs a source build"))
                continue
            with ui.step(f"verify {p.name} on stock only: {test}"):
                stock = run_test(stock_python, test, repo_root, env)
            rows.append(Row(p.name, test, stock, None, reason))
            continue
        with ui.step(f"verify {p.name}: {test}"):
            stock = run_test(stock_python, test, repo_root, env)
            fork = run_test(fork_python, test, repo_root, env)
        rows.append(Row(p.name, test, stock, fork))
        ui.note(f"    stock: {stock.word}   fork: {fork.word}")
    return rows


def table(rows: list[Row]) -> str:
    head = ("patch", "stock", "fork", "verdict")
    data = [
        (r.patch, r.stock.word if r.stock else "-", r.fork.word if r.fork else "-", r.verdict)
        for r in rows
    ]
    widths = [max(len(x[i]) for x in [head, *data]) for i in range(4)]
    fmt = "  ".join(f"{{:{w}}}" for w in widths)
    lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*d) for d in data]
    return "\n".join(lines)

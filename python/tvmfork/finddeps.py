"""`tvmfork verify --alone --find-deps`: the earlier patches a patch needs and does not name.

A patch whose regression tests fail on its `Depends-On` closure with it (`verify --alone`'s
INCOMPLETE) needs the behaviour of a patch it does not name. For each such patch this finds
them by bisection over the earlier patches of the series, all patches searched in lockstep (one
`run_jobs` batch per step, so the test servers are reused):

1. its tests on its closure and itself: pass, and it needs nothing more;
2. on every earlier patch and itself: fail, and no earlier patch helps (the test needs
   something an overlay does not give: a wheel's metadata, a GPU; said so);
3. else the smallest prefix of the earlier patches (with their closures) that makes it pass:
   its last patch is needed; it joins the closure, and the search repeats from 1 with the
   patches before it.

Each step is one test run of the patch's regression tests on an overlay (`alone.overlay_tree`);
an overlay whose patches do not apply as text counts as a failing run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tvmfork import ui
from tvmfork.alone import overlay_tree, stock_package
from tvmfork.errors import PatchError
from tvmfork.series import Patch, Series
from tvmfork.verify import DEFAULT_TIMEOUT, Job, Outcome, regression_tests, run_jobs

CHECK, ALL, BISECT, DONE, NONE = "check", "all", "bisect", "done", "none"


@dataclass
class Search:
    """One patch's search: the closure so far, the earlier patches still candidates, and the
    bisection's bounds over them (the smallest passing prefix length is in (lo, hi])."""

    patch: Patch
    closure: list[Patch]
    candidates: list[Patch]
    found: list[str] = field(default_factory=list)
    state: str = CHECK
    lo: int = 0
    hi: int = 0
    runs: int = 0

    def trial(self) -> list[str]:
        """The names of the patches to test with (besides the patch itself) at this step."""
        if self.state == CHECK:
            extra: list[Patch] = []
        elif self.state == ALL:
            extra = self.candidates
        else:
            extra = self.candidates[: (self.lo + self.hi) // 2]
        return [p.name for p in self.closure] + [p.name for p in extra]

    def step(self, passed: bool, series: Series) -> None:
        """Advance on the outcome of the run `trial()` named."""
        self.runs += 1
        if self.state == CHECK:
            if passed:
                self.state = DONE
            elif not self.candidates:
                self.state = NONE
            else:
                self.state = ALL
            return
        if self.state == ALL:
            if not passed:
                self.state = NONE
                return
            self.state, self.lo, self.hi = BISECT, 0, len(self.candidates)
        else:
            mid = (self.lo + self.hi) // 2
            if passed:
                self.hi = mid
            else:
                self.lo = mid
        if self.hi - self.lo <= 1:
            needed = self.candidates[self.hi - 1]
            self.found.append(needed.name)
            added = {needed.name, *(d.name for d in series.dependencies(needed))}
            self.closure = [p for p in series.patches if p.name in added or p in self.closure]
            self.candidates = [p for p in self.candidates[: self.hi - 1] if p.name not in added]
            self.state = CHECK


def closure_of(series: Series, names: list[str]) -> list[Patch]:
    """`names` and their Depends-On closures, in series order."""
    wanted = set(names)
    for n in names:
        wanted.update(d.name for d in series.dependencies(series.get(n)))
    return [p for p in series.patches if p.name in wanted]


def start(series: Series, patch: Patch) -> Search:
    deps = series.dependencies(patch)
    index = series.patches.index(patch)
    have = {d.name for d in deps}
    earlier = [
        p for p in series.patches[:index] if p.name not in have and not series.needs_build(p)
    ]
    return Search(patch, deps, earlier)


def run(
    series: Series,
    patches: list[Patch],
    repo_root: Path,
    stock_python: Path,
    stock_wheel: Path,
    cache: Path,
    timeout: float = DEFAULT_TIMEOUT,
    on_done: Callable[[Job, Outcome, float], None] | None = None,
    slots: int = 2,
) -> list[Search]:
    """Search each of `patches` (Python patches with regression tests) to the end."""
    package = stock_package(stock_python)
    env = {"PYTHONDONTWRITEBYTECODE": "1"}
    searches = [start(series, p) for p in patches]
    round_no = 0
    while True:
        active = [s for s in searches if s.state in (CHECK, ALL, BISECT)]
        if not active:
            return searches
        round_no += 1
        jobs, failed = [], []
        for s in active:
            names = closure_of(series, s.trial())
            try:
                tree = overlay_tree(package, stock_wheel, [*names, s.patch], cache)
            except PatchError:
                failed.append(s)
                continue
            tests = tuple(regression_tests(s.patch))
            jobs.append(Job(s.patch.name, stock_python, tests, str(tree)))
        results: dict[str, Outcome] = {}
        if jobs:
            with ui.step(f"find-deps round {round_no}: {len(jobs)} test run(s)"):
                results = run_jobs(jobs, repo_root, env, timeout, slots, on_done=on_done)
        for s in active:
            outcome = results.get(s.patch.name)
            before = (s.state, len(s.found))
            s.step(s not in failed and outcome is not None and outcome.passed, series)
            # each finding is said when it is made: a run cut short keeps what it found
            if len(s.found) > before[1]:
                ui.note(f"{s.patch.name}: needs {s.found[-1]} ({s.runs} runs so far)")
            if s.state in (DONE, NONE) and before[0] not in (DONE, NONE):
                ui.note(describe([s])[0].strip())


def describe(searches: list[Search]) -> list[str]:
    lines = []
    for s in searches:
        if s.state == DONE and s.found:
            what = f"needs {', '.join(n.removesuffix('.patch') for n in s.found)}"
        elif s.state == DONE:
            what = "needs nothing beyond its Depends-On"
        else:
            what = "fails on every earlier patch too: not a missing Depends-On"
            if s.found:
                what += f" (after adding {', '.join(s.found)})"
        lines.append(f"  {s.patch.name}: {what} ({s.runs} runs)")
    return lines

"""Terminal output: timed steps and plain notes, all on stderr so stdout stays data."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path


def note(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def warn(msg: str) -> None:
    print(f"warning: {msg}", file=sys.stderr, flush=True)


@contextmanager
def step(title: str) -> Iterator[None]:
    """Print `title ...`, run the block, then `done in N s` (or `failed after N s`)."""
    note(f"==> {title} ...")
    start = time.monotonic()
    try:
        yield
    except BaseException:
        note(f"    failed after {time.monotonic() - start:.1f} s")
        raise
    note(f"    done in {time.monotonic() - start:.1f} s")


NINJA_STEP = re.compile(r"^\s*\[(\d+)/(\d+)\]\s*(.*)$")


def columns(head: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    """`rows` under `head` as a plain-text table: columns as wide as their widest cell, a rule
    under the head."""
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    fmt = "  ".join(f"{{:{w}}}" for w in widths)
    lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    return "\n".join([*lines, *(fmt.format(*r) for r in rows)])


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


ROUGH = (
    "rough: from the step rate; a cold build runs its cheap steps first, so this can be 2-3x low"
)
PAUSE = 900.0
"""A gap of more than this many seconds between two steps is a pause (the build stopped, the
machine suspended): only PAUSE of it counts as build time."""


class Progress:
    """Build progress from ninja's `[n/total] what` lines: one status line on stderr at most
    every `every` seconds (and at the end), with an estimate of the time left.

    TVM's compile steps differ in cost by two orders of magnitude, and ninja runs cheap ones
    first, so a rate from the steps done so far is far off (2-3x too low for the first half of
    a cold build). With `costs` (seconds per output, from an earlier build's .ninja_log) and a
    build of about as many steps, the estimate is the known cost of the outputs still to come,
    scaled by how this build's speed compares to that one's so far. Without them it is the
    rate, and the line says how rough that is. Time counts only while the build runs: a gap
    between two steps longer than PAUSE is counted as PAUSE, and the line says how long the
    build was paused.
    """

    def __init__(self, title: str, every: float = 15.0, costs: dict[str, float] | None = None):
        self.title = title
        self.every = every
        self.start = time.monotonic()
        self.last_seen = self.start
        self.active = 0.0
        self.paused = 0.0
        self.first: tuple[float, int] | None = None
        self.last_print = 0.0
        self.done = 0
        self.total = 0
        self.costs = costs or {}
        self.seen: set[str] = set()

    def _profile_fits(self) -> bool:
        return bool(self.costs) and abs(self.total - len(self.costs)) <= 0.1 * len(self.costs)

    def eta(self) -> tuple[float, str] | None:
        """(seconds left, how it was estimated), or None before there is a basis. Both sides
        of each ratio are build time (`active`), pauses left out."""
        if self._profile_fits():
            done_cost = sum(self.costs.get(o, 0.0) for o in self.seen)
            if done_cost > 0:
                left = sum(c for o, c in self.costs.items() if o not in self.seen)
                return left * self.active / done_cost, "from the last build's step times"
        if self.first is None or self.done <= self.first[1] or not self.total:
            return None
        t0, n0 = self.first
        rate = (self.done - n0) / max(self.active - t0, 1e-6)
        return ((self.total - self.done) / rate, ROUGH) if rate > 0 else None

    def line(self, text: str) -> None:
        m = NINJA_STEP.match(text)
        if not m:
            return
        now = time.monotonic()
        gap = now - self.last_seen
        self.active += min(gap, PAUSE)
        self.paused += max(gap - PAUSE, 0.0)
        self.last_seen = now
        self.done, self.total = int(m.group(1)), int(m.group(2))
        what = m.group(3).strip()
        if what:
            self.seen.add(what.split()[-1])  # "Building CXX object <output>"
        if self.first is None:
            self.first = (self.active, self.done)
        if now - self.last_print < self.every and self.done != self.total:
            return
        self.last_print = now
        est = self.eta()
        left = f", about {_clock(est[0])} left ({est[1]})" if est is not None else ""
        paused = f" (paused {_clock(self.paused)} not counted)" if self.paused else ""
        what = what if len(what) <= 70 else "..." + what[-67:]
        note(
            f"    {self.title}: [{self.done}/{self.total}] "
            f"{100 * self.done // max(self.total, 1)}%, {_clock(self.active)} elapsed{paused}"
            f"{left}  {what}"
        )


def ninja_costs(ninja_log: Path) -> dict[str, float]:
    """Seconds per output of the builds a .ninja_log records (the last run of each)."""
    costs: dict[str, float] = {}
    try:
        lines = ninja_log.read_text(errors="replace").splitlines()
    except OSError:
        return costs
    for line in lines:
        parts = line.split("\t")
        if len(parts) >= 4 and parts[0].isdigit() and parts[1].isdigit():
            costs[parts[3]] = max((int(parts[1]) - int(parts[0])) / 1000.0, 0.0)
    return costs

"""Terminal output: timed steps and plain notes, all on stderr so stdout stays data."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager


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


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """Build progress from ninja's `[n/total] what` lines: one status line on stderr at most
    every `every` seconds (and at the end), with an estimate from the rate so far."""

    def __init__(self, title: str, every: float = 15.0) -> None:
        self.title = title
        self.every = every
        self.start = time.monotonic()
        self.first: tuple[float, int] | None = None
        self.last_print = 0.0
        self.done = 0
        self.total = 0

    def eta(self, now: float) -> float | None:
        if self.first is None or self.done <= self.first[1] or not self.total:
            return None
        t0, n0 = self.first
        rate = (self.done - n0) / max(now - t0, 1e-6)
        return (self.total - self.done) / rate if rate > 0 else None

    def line(self, text: str) -> None:
        m = NINJA_STEP.match(text)
        if not m:
            return
        now = time.monotonic()
        self.done, self.total = int(m.group(1)), int(m.group(2))
        if self.first is None:
            self.first = (now, self.done)
        if now - self.last_print < self.every and self.done != self.total:
            return
        self.last_print = now
        eta = self.eta(now)
        left = f", about {_clock(eta)} left" if eta is not None else ""
        what = m.group(3).strip()
        what = what if len(what) <= 70 else "..." + what[-67:]
        note(
            f"    {self.title}: [{self.done}/{self.total}] "
            f"{100 * self.done // max(self.total, 1)}%, {_clock(now - self.start)} elapsed"
            f"{left}  {what}"
        )

"""Terminal output: timed steps and plain notes, all on stderr so stdout stays data."""

from __future__ import annotations

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

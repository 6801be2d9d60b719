"""One timing helper for the worker and every benchmark script: each function called once to
warm up, then the functions called in turn (interleaved, so that a machine's drift falls on
all alike), and the median of each. Scripts import it by path (`scripts/_paths.py`)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any


def samples_ms(
    fns: Mapping[str, Callable[[], Any]],
    reps: int,
    budget_s: float = float("inf"),
    threads: int | None = None,
    *,
    block: int = 1,
    pause_s: float = 0.0,
    settle: bool | None = None,
) -> dict[str, list[float]]:
    """Each fn's call times in ms: one warm-up call each, then rounds in which each fn in
    turn makes `block` timed calls, until each has `reps` samples or `budget_s` seconds have
    passed (at least one round).

    `settle` (by default: when more than one thread is asked for) makes each turn begin with
    an untimed call of the same fn, after `pause_s` seconds: the runtime timed before keeps
    its pool's threads spinning for a while after it returns (ONNX Runtime's and OpenMP's
    do), and on a machine with no more cores than threads they hold a core the next
    runtime's parallel loops wait for. Measured on 2 cores, 2 threads: squeezenet1_1 on the
    fork took 22 ms right after a PyTorch call, 10 ms after its own (a user running one
    runtime sees the latter).
    """
    settle = (threads or 1) > 1 if settle is None else settle
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for fn in fns.values():
        fn()
    start = time.perf_counter()
    done = 0
    while done < reps:
        n = min(block, reps - done)
        for k, fn in fns.items():
            if pause_s:
                time.sleep(pause_s)
            if settle:
                fn()
            for _ in range(n):
                t = time.perf_counter()
                fn()
                samples[k].append((time.perf_counter() - t) * 1e3)
        done += n
        if time.perf_counter() - start > budget_s:
            break
    return samples


def interleaved(
    fns: Mapping[str, Callable[[], Any]],
    reps: int,
    budget_s: float = float("inf"),
    threads: int | None = None,
    **how: Any,
) -> dict[str, float]:
    """The median ms of each fn (keys `NAME_ms`), timed as `samples_ms` times them."""
    got = samples_ms(fns, reps, budget_s, threads, **how)
    return {f"{k}_ms": statistics.median(v) for k, v in got.items() if v}

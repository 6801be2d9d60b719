"""Native patch: no worker is pinned to the core the main thread runs on (issue 49's split).

The runtime pins its workers to `sorted_order_[1..n)` while the main thread, which runs
task 0, stays unpinned on whichever of the n cores it is on. Stock 0.26.0 pins a worker to
the main thread's current core when that core is not `sorted_order_[0]`: the two then share
a core (measured on a 2-core VM: the same conv took 38 ms or 81 ms from one process to the
next). The fork swaps the main thread's current core to the front before pinning. The
probe moves the main thread to the last CPU first, so stock shows the bug on any machine
with two or more CPUs.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and platform.machine() == "x86_64"),
    reason="the runtime pins its workers on Linux",
)

_NO_OVERRIDE = {
    k: v for k, v in os.environ.items() if k not in ("TVM_NUM_THREADS", "OMP_NUM_THREADS")
}


_PIN_PROBE = """
import os, tvm
cpus = sorted(os.sched_getaffinity(0))
os.sched_setaffinity(0, {cpus[-1]})  # move this (the main) thread to the last CPU,
os.sched_setaffinity(0, cpus)  # then allow all again: it stays there for now
tvm.runtime.num_threads()  # creates the pool and pins its workers
me = os.getpid()
here = int(open(f"/proc/{me}/task/{me}/stat").read().rsplit(")", 1)[1].split()[36])
pinned = []
for tid in os.listdir(f"/proc/{me}/task"):
    status = open(f"/proc/{me}/task/{tid}/status").read()
    allowed = status.split("Cpus_allowed_list:")[1].split()[0]
    if int(tid) != me and allowed.isdigit():
        pinned.append(int(allowed))
print(here, *pinned)
"""


def test_no_worker_is_pinned_to_the_main_threads_core() -> None:
    """The main thread runs task 0 unpinned: a worker pinned to its core would share it."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("one CPU: no workers to pin")
    env = dict(_NO_OVERRIDE, TVM_NUM_THREADS=str(len(cpus)))
    done = subprocess.run(
        [sys.executable, "-c", _PIN_PROBE], env=env, capture_output=True, text=True, check=True
    )
    main_cpu, *workers = (int(v) for v in done.stdout.split())
    assert workers, f"no pinned worker threads seen: {done.stdout!r}"
    assert main_cpu not in workers, f"main thread on CPU {main_cpu}, workers pinned to {workers}"

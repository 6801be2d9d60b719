"""Native patch: TVM's default thread count is one per physical core it may use (issue 12).

Stock 0.26.0 halves `std::thread::hardware_concurrency()` on x86-64, assuming 2-way SMT,
and ignores the affinity mask. On a machine without SMT (this project's 2-core VMs
report one thread per core) stock TVM runs every parallel loop on half the cores while
PyTorch uses all of them. The fork counts the distinct (package, core) pairs of the
CPUs in the process's affinity mask. Where the machine does have 2-way SMT on every
core and no affinity limit, stock and fork agree and both sides pass.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and platform.machine() == "x86_64"),
    reason="the topology-based default applies to Linux on x86-64",
)

_NO_OVERRIDE = {
    k: v for k, v in os.environ.items() if k not in ("TVM_NUM_THREADS", "OMP_NUM_THREADS")
}


def physical_cores(cpus: list[int]) -> int:
    """Distinct (package, core) pairs among `cpus`, as the kernel's sysfs reports them."""
    cores = set()
    for cpu in cpus:
        topology = f"/sys/devices/system/cpu/cpu{cpu}/topology/"
        try:
            with open(topology + "physical_package_id") as pkg, open(topology + "core_id") as core:
                cores.add((int(pkg.read()), int(core.read())))
        except OSError:
            pytest.skip("this kernel does not report the CPU topology")
    return len(cores)


def tvm_threads(cpus: list[int] | None = None, env: dict[str, str] | None = None) -> int:
    """`tvm.runtime.num_threads()` of a fresh process, pinned to `cpus` when given."""
    pin = f"os.sched_setaffinity(0, {cpus!r}); " if cpus is not None else ""
    code = f"import os; {pin}import tvm; print(tvm.runtime.num_threads())"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=_NO_OVERRIDE if env is None else env,
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout.split()[-1])


def test_one_thread_per_physical_core() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    assert tvm_threads() == physical_cores(cpus), (
        f"{len(cpus)} CPUs, {physical_cores(cpus)} physical cores"
    )


def test_affinity_mask_bounds_the_threads() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    assert tvm_threads(cpus[:1]) == 1
    if len(cpus) >= 2:
        assert tvm_threads(cpus[:2]) == physical_cores(cpus[:2])


def test_tvm_num_threads_still_wins() -> None:
    assert tvm_threads(env=dict(_NO_OVERRIDE, TVM_NUM_THREADS="1")) == 1

"""`Target.from_device("cpu")` leaves out the features the host CPU's name implies but the
host does not have (issue 49; seen on a 2-core VM, AMD EPYC family 25 model 17).

Stock 0.26.0 returns `{"mcpu": <the host's CPU name>}` alone. A hypervisor may hide features
of the CPU it runs on: a Zen 4 VM whose CPUID reports no AVX-512 is `znver4` to LLVM, whose
znver4 has AVX-512, so stock's host target compiles AVX-512 code and the process stops on
an illegal instruction (SIGILL) the first time it runs a vectorized kernel. The fork adds
`mattr` with the features the name implies and `llvm::sys::getHostCPUFeatures` says are
absent.

The first test fakes such a host (LLVM's host queries overridden), so it shows the bug on
any x86-64 machine; the second runs a kernel for the real host in a subprocess, which shows
the crash only on a host whose CPU name claims more than it has.
"""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest
import tvm
import tvm_ffi
from tvm.target import codegen

pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64"), reason="an x86-64 CPU name is faked"
)

_NAME = "tvm.codegen.llvm.GetHostCPUName"
_FEATURES = "tvm.codegen.llvm.GetHostCPUFeatures"


@pytest.fixture
def zen4_without_avx512():
    """LLVM's host queries answer as on a Zen 4 whose hypervisor hides AVX-512."""
    real = {name: tvm_ffi.get_global_func(name) for name in (_NAME, _FEATURES)}
    znver4 = codegen.llvm_get_cpu_features(tvm.target.Target({"kind": "llvm", "mcpu": "znver4"}))
    features = {f: not f.startswith("avx512") for f in znver4}
    tvm_ffi.register_global_func(_NAME, lambda: "znver4", override=True)
    tvm_ffi.register_global_func(_FEATURES, lambda: features, override=True)
    yield
    for name, func in real.items():
        tvm_ffi.register_global_func(name, func, override=True)


@pytest.mark.usefixtures("zen4_without_avx512")
def test_host_target_leaves_out_features_the_host_lacks() -> None:
    target = tvm.target.Target.from_device("cpu")
    assert str(target.attrs["mcpu"]) == "znver4"
    have = codegen.llvm_get_cpu_features(target)
    assert "avx2" in have and "fma" in have, sorted(have)
    hidden = sorted(f for f in have if f.startswith("avx512"))
    assert not hidden, f"the host target enables features the host lacks: {hidden}"


@pytest.mark.usefixtures("zen4_without_avx512")
def test_host_target_keeps_what_the_host_has() -> None:
    """Only the lacking features are turned off: the name's others stay."""
    target = tvm.target.Target.from_device("cpu")
    have = codegen.llvm_get_cpu_features(target)
    znver4 = codegen.llvm_get_cpu_features(tvm.target.Target({"kind": "llvm", "mcpu": "znver4"}))
    assert have == {f for f in znver4 if not f.startswith("avx512")}


_RUN = """
import numpy as np, tvm
from tvm.script import tirx as T

@T.prim_func
def add(a: T.Buffer((1024,), "float32"), b: T.Buffer((1024,), "float32")):
    for i in T.vectorized(1024):
        b[i] = a[i] * T.float32(2) + T.float32(1)

f = tvm.compile(add, target=tvm.target.Target.from_device("cpu"))
x = np.arange(1024, dtype="float32")
y = tvm.runtime.tensor(np.zeros(1024, "float32"))
f(tvm.runtime.tensor(x), y)
np.testing.assert_array_equal(y.numpy(), x * 2 + 1)
print("ok")
"""


def test_a_kernel_for_the_host_target_runs(tmp_path) -> None:
    """Compiled for `Target.from_device("cpu")` and run here: no illegal instruction."""
    script = tmp_path / "host_kernel.py"  # TVMScript parses its source: a file, not -c
    script.write_text(_RUN)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), (
        f"exit {done.returncode}: {done.stderr[-2000:]}"
    )

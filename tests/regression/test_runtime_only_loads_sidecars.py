"""Patch: a runtime-only TVM loads the runtime libraries beside libtvm_runtime.

`TVM_USE_RUNTIME_LIB=1` (or a package without libtvm_compiler, which TVM detects) is how a
device runs compiled modules with TVM's runtime alone. `import tvm` then skips the built-in
backends' Python hooks, which need the compiler, and with them the loading of
libtvm_runtime_extra and of each backend's runtime library (libtvm_runtime_cuda): what a
compiled module calls there is missing. A CPU module that sorts (TOPI's sort calls contrib
sort, in libtvm_runtime_extra) fails on stock with "Cannot find function
tvm.contrib.sort.argsort in the imported modules or global registry"; a CUDA module finds no
device API. On the fork runtime-only TVM loads the runtime libraries that are present and
load (not the hooks), and the module runs and matches numpy.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import tvm
from tvm.script import ir as I
from tvm.script import relax as R

RUN = """
import sys
import numpy as np
import tvm
from tvm.runtime.vm import VirtualMachine

assert tvm.base._RUNTIME_ONLY
vm = VirtualMachine(tvm.runtime.load_module(sys.argv[1]), tvm.cpu())
x = np.array([[3.0, 1.0, 2.0], [0.5, -1.0, 4.0]], dtype="float32")
out = vm["main"](tvm.runtime.tensor(x))
np.testing.assert_array_equal(out.numpy(), np.argsort(x, axis=1, kind="stable"))
print("sorted in runtime-only TVM")
"""


@I.ir_module
class Argsort:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "int64"):
        with R.dataflow():
            y = R.argsort(x, axis=1, dtype="int64")
            R.output(y)
        return y


def test_a_module_that_sorts_runs_in_runtime_only_tvm(tmp_path: Path) -> None:
    lib = tmp_path / "argsort.so"
    tvm.compile(Argsort, target="llvm").export_library(str(lib))
    env = {**os.environ, "TVM_USE_RUNTIME_LIB": "1"}
    r = subprocess.run(
        [sys.executable, "-c", RUN, str(lib)], capture_output=True, text=True, env=env, check=False
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "sorted in runtime-only TVM" in r.stdout


def test_the_compiler_s_import_is_unchanged() -> None:
    # with the compiler the backends' hooks load the same libraries, as before
    assert not tvm.base._RUNTIME_ONLY
    assert "tvm_runtime_extra" in tvm.base._LOADED_LIBS
    x = np.zeros(1, "float32")
    assert tvm.runtime.tensor(x).numpy().shape == (1,)

"""The fork as a deployed runtime: `TVM_USE_RUNTIME_LIB=1` loads TVM's runtime library alone
(how a device or an RPC server runs compiled models, without the compiler). Stock imports and
runs a library so; the fork must too. Its `tvm.target` once imported the LLVM lowering rules of
the erf and exp patches at import time, which register through the compiler library: `import
tvm` failed in runtime-only mode (found running the fork's CUDA build on a GPU machine)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tvmfork import lock, settings, sides
from tvmfork import series as seriesmod

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.overlay

BUILD = """
import sys
import tvm
from tvm.script import ir as I, relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), "float32")):
        return R.add(x, x)

tvm.compile(Module, "llvm").export_library(sys.argv[1])
"""

RUN = """
import sys
import numpy as np
import tvm
from tvm.runtime.vm import VirtualMachine

assert tvm.base._RUNTIME_ONLY
vm = VirtualMachine(tvm.runtime.load_module(sys.argv[1]), tvm.cpu())
print(vm["main"](tvm.runtime.tensor(np.arange(4, dtype="float32"))).numpy().tolist())
"""


@pytest.mark.parametrize("side", ["stock", "fork"])
def test_a_library_runs_with_the_runtime_library_only(side: str, tmp_path: Path) -> None:
    s, pin = settings.load(ROOT), lock.load(ROOT / "patches" / seriesmod.LOCK)
    python = str(sides.side_python(s, pin, side))
    lib, build, run = tmp_path / "add.so", tmp_path / "build.py", tmp_path / "run.py"
    build.write_text(BUILD)  # TVMScript reads its source: a file, not -c
    run.write_text(RUN)
    subprocess.run([python, str(build), str(lib)], check=True, capture_output=True)
    env = {**os.environ, "TVM_USE_RUNTIME_LIB": "1"}
    r = subprocess.run(
        [python, str(run), str(lib)], capture_output=True, text=True, env=env, check=False
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().splitlines()[-1] == "[0.0, 2.0, 4.0, 6.0]", r.stdout

"""Patch: one library for several x86-64 levels, the best one the running CPU supports called.

TVM compiles for one CPU: `llvm` alone is the x86-64 baseline (SSE2: a quarter of AVX-512's
vector width, no FMA), and the host's CPU (`Target.from_device("cpu")`) gives a library that
dies with SIGILL on an older CPU. With the patch, an `llvm` target's `mcpu` may list x86-64
psABI levels: {"kind": "llvm", "mcpu": "x86-64,x86-64-v3,x86-64-v4"} builds each kernel once
per level and calls the highest level the running CPU supports (asked through glibc, which
honours `GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F`). Stock TVM says the mcpu "is not valid",
compiles everything for the generic CPU, and the library has no AVX code at all.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from .relaxrun import X86_LEVELS, export_levels_and_host

LEVELS = X86_LEVELS
V4_FLAGS = {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}

# runs a library in a fresh process (a glibc tunable or an emulated CPU applies to it whole)
RUN = """
import sys, numpy as np, tvm
from tvm import relax
lib = tvm.runtime.load_module(sys.argv[1])
x, want = np.load(sys.argv[2]), np.load(sys.argv[3])
out = relax.VirtualMachine(lib, tvm.cpu())["main"](tvm.runtime.tensor(x))
out = (out if isinstance(out, tvm.runtime.Tensor) else out[0]).numpy()
flag = tvm.runtime.empty((), "bool", tvm.cpu())
lib.get_function("__tvm_cpu_supports_x86_64_v4", query_imports=True)(flag)
print("v4", bool(flag.numpy()), "err", float(np.abs(out - want).max()))
"""


def _model() -> tuple[torch.nn.Module, torch.Tensor]:
    model = torch.nn.Sequential(
        torch.nn.Conv2d(16, 32, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(32 * 8 * 8, 64),
        torch.nn.Softmax(-1),
    ).eval()
    return model, torch.randn(2, 16, 8, 8)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The model's library for LEVELS and for the host's CPU, its input and PyTorch's output."""
    torch.manual_seed(0)
    model, x = _model()
    return export_levels_and_host(model, x, LEVELS, tmp_path_factory.mktemp("levels"))


def _cpu_flags() -> set[str]:
    line = next(
        ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("flags")
    )
    return set(line.split(":", 1)[1].split())


def _run(built: dict[str, Path], lib: str, *prefix: str, env: dict | None = None):
    return subprocess.run(
        [*prefix, sys.executable, "-c", RUN, str(built[lib]), str(built["x"]), str(built["want"])],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
        timeout=600,
    )


def test_each_level_has_its_own_kernels_compiled_for_it(built: dict[str, Path]) -> None:
    names = subprocess.run(
        ["nm", "--defined-only", str(built["levels"])], capture_output=True, text=True, check=True
    ).stdout.split()
    for level in LEVELS.split(","):
        # the kernel's name (fused with its bias or not), or its name with the weight it
        # takes blocked at build time
        kernel = re.compile(rf"__tvm_ffi_\w*matmul\w*__{level.replace('-', '_')}(_packed\d+)?")
        assert any(kernel.fullmatch(name) for name in names), f"no {level} kernel"
    code = subprocess.run(
        ["objdump", "-d", str(built["levels"])], capture_output=True, text=True, check=True
    ).stdout
    assert "%ymm" in code and "%zmm" in code and "vfmadd" in code, "no AVX2 or AVX-512 code"


def test_the_library_calls_the_best_level_this_cpu_has(built: dict[str, Path]) -> None:
    r = _run(built, "levels")
    assert r.returncode == 0, r.stderr[-3000:]
    v4, err = r.stdout.split()[1], float(r.stdout.split()[3])
    assert v4 == str(V4_FLAGS <= _cpu_flags()), r.stdout
    assert err < 1e-5, r.stdout


def test_glibc_tunables_mask_a_level(built: dict[str, Path]) -> None:
    """Masking AVX-512 as glibc's own ifuncs see it: the library asks glibc, so it runs the
    lower levels' kernels, and computes the same result."""
    r = _run(built, "levels", env={"GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX512F"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split()[1] == "False" and float(r.stdout.split()[3]) < 1e-5, r.stdout


@pytest.mark.skipif(shutil.which("qemu-x86_64-static") is None, reason="needs qemu-user-static")
def test_a_cpu_without_avx_runs_the_baseline(built: dict[str, Path]) -> None:
    """On an emulated Nehalem (SSE4.2, no AVX) the host-ISA library dies with SIGILL and the
    multi-level one runs its baseline kernels, right."""
    emulated = ("qemu-x86_64-static", "-cpu", "Nehalem")
    host = _run(built, "host", *emulated)
    if "avx" in _cpu_flags():
        assert host.returncode != 0 and "Illegal instruction" in host.stderr, host.stderr[-2000:]
    r = _run(built, "levels", *emulated)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split()[1] == "False" and float(r.stdout.split()[3]) < 1e-5, r.stdout

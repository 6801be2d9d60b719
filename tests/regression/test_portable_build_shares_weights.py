"""Patch: the levels of a portable build share one blocked copy of each constant weight.

A build for several x86-64 levels (`{"kind": "llvm", "mcpu": "x86-64,x86-64-v3,x86-64-v4"}`,
a fork patch) schedules each kernel once per level, and dlight's CPU Contraction rule blocks a
constant weight along each level's register tile (a batch-1 dense layer's (K, N) weight as
N/w x K x w, w = 32, 64 and 128 for SSE, AVX2 and AVX-512): the weight was blocked, folded at
build time and stored in the library once per level. torchvision's alexnet (244 MB of weights)
compiled in 3.9x stock's time, its library three times its weights. Each level's kernel now
blocks a weight for the lowest level's tile wherever that tile is a whole part of its own and
holds whole vectors of it (a wider tile reads several whole blocks): one copy for all levels.
Stock knows no level list (it compiles the generic CPU's code once), so it has no kernel for a
higher level.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import tvm
from tvm import relax

from .relaxrun import PORTABLE, export_levels_and_host, import_torch

LEVELS = PORTABLE
SUFFIXES = ("x86_64", "x86_64_v3", "x86_64_v4")

# runs a library in a fresh process, where a glibc tunable masks the higher levels
RUN = """
import sys, numpy as np, tvm
from tvm import relax
vm = relax.VirtualMachine(tvm.runtime.load_module(sys.argv[1]), tvm.cpu())
out = vm["main"](tvm.runtime.tensor(np.load(sys.argv[2])))
out = out if isinstance(out, tvm.runtime.Tensor) else out[0]
print(float(np.abs(out.numpy() - np.load(sys.argv[3])).max()))
"""


def _model() -> tuple[torch.nn.Module, torch.Tensor]:
    """A conv on a 5 x 5 map (its output channels vectorized at every level) and a batch-1
    dense layer with a 16 MB weight."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(16, 64, 3),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(64 * 5 * 5, 2048),
    ).eval()
    return model, torch.randn(1, 16, 7, 7)


def _blocked(func: relax.Function) -> list[relax.Constant]:
    """The blocked weights `func` reads, each once: constants of more than 2 dimensions, the
    innermost a block of several elements (not a bias reshaped to (1, C, 1, 1))."""
    found: list[relax.Constant] = []

    def visit(expr: relax.Expr) -> None:
        if isinstance(expr, relax.Constant) and expr.data.ndim > 2 and expr.data.shape[-1] > 1:
            if not any(expr.same_as(c) for c in found):
                found.append(expr)

    relax.analysis.post_order_visit(func, visit)
    return found


def test_every_level_reads_one_blocked_copy_of_each_weight() -> None:
    model, x = _model()
    with tvm.target.Target(LEVELS):
        mod = relax.get_pipeline("default")(import_torch(model, x))
    names = {gvar.name_hint for gvar in mod.get_global_vars()}
    missing = [s for s in SUFFIXES if f"main__{s}" not in names]
    assert not missing, f"no function for the levels {missing}: {sorted(names)}"
    blocked = {suffix: _blocked(mod[f"main__{suffix}"]) for suffix in SUFFIXES}
    base = blocked["x86_64"]
    assert len(base) == 2, [c.data.shape for c in base]  # the conv's weight and the dense one
    dense = max(base, key=lambda c: c.data.numpy().size)
    for suffix, constants in blocked.items():
        assert any(dense.same_as(c) for c in constants), f"{suffix} blocks its own dense weight"
    # the conv's blocks of 8 output channels (2 SSE vectors) are half an AVX-512 vector: the
    # x86-64-v4 kernel keeps its own, the x86-64-v3 one reads them
    own = {
        s: [c.data.shape for c in found if not any(c.same_as(b) for b in base)]
        for s, found in blocked.items()
    }
    assert not own["x86_64_v3"] and len(own["x86_64_v4"]) <= 1, own


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    model, x = _model()
    return export_levels_and_host(model, x, LEVELS["mcpu"], tmp_path_factory.mktemp("shared"))


def test_the_library_holds_each_weight_once(built: dict[str, Path]) -> None:
    names = subprocess.run(
        ["nm", "--defined-only", str(built["levels"])], capture_output=True, text=True, check=True
    ).stdout
    assert "x86_64_v4" in names, "no x86-64-v4 kernel in the library"
    levels, host = built["levels"].stat().st_size, built["host"].stat().st_size
    # 16.4 MB of weights: three copies of them made the library 3x the host build's size
    assert levels < 1.25 * host, f"{levels} bytes, the host-ISA build {host}"


@pytest.mark.parametrize("mask", ["", "-AVX512F", "-AVX2,-AVX512F"])
def test_each_level_computes_right_from_the_shared_weights(
    built: dict[str, Path], mask: str
) -> None:
    env = {**os.environ, "GLIBC_TUNABLES": f"glibc.cpu.hwcaps={mask}"} if mask else None
    r = subprocess.run(
        [sys.executable, "-c", RUN, str(built["levels"]), str(built["x"]), str(built["want"])],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert float(r.stdout.split()[-1]) < 1e-4, r.stdout

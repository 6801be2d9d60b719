"""Patches: a portable build's levels are lowered and compiled at once, and the weight packing
constant folding runs is compiled in one module.

A build for several x86-64 levels (`{"kind": "llvm", "mcpu": "x86-64,x86-64-v3,x86-64-v4"}`,
a fork patch) holds each kernel once per level; `tirx.build` lowered them in one module and
compiled the levels' modules one after the other, and the default pipeline's constant folding
compiled each kernel it ran (every weight's blocked copy, per level) in a module of its own, a
code generation and a JIT each. torchvision's resnet18 took 8.4-9.1 s for the three levels,
against 2.6 s for the host's CPU and 1.6 s on stock (2-core AMD EPYC): 4.2x stock over the
issue's 8 torchvision models, where the goal is at most 3x. Now each level's functions are
lowered and compiled in a thread of their own (6.3-6.5 s with both patches). Compile times are
measured by the benchmark (`tvmfork conformance ... --target portable`), not here: these tests
check the structure the time comes from, and the numerics. Stock knows no level list (it
compiles for the generic CPU in one thread) and folds no weight.
"""

from __future__ import annotations

import threading

import numpy as np
import torch
import tvm
from tvm import relax

from .hf import transformers
from .relaxrun import PORTABLE, import_torch, run_llvm

LEVELS = PORTABLE


def _model() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(8, 32, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(32, 48, 3, padding=1),
        torch.nn.Flatten(),
        torch.nn.Linear(48 * 6 * 6, 64),
    ).eval()
    return model, torch.randn(2, 8, 6, 6)


def test_each_level_is_lowered_and_compiled_at_once() -> None:
    model, x = _model()
    with torch.no_grad():
        want = model(x).numpy()
    lowered: list[tuple[int, list[str]]] = []  # (thread, the kernels lowered together)

    @tvm.instrument.pass_instrument
    class Threads:
        def run_before_pass(self, mod: tvm.IRModule, info: tvm.transform.PassInfo) -> None:
            if info.name == "tirx.MakePackedAPI":
                names = sorted(g.name_hint for g in mod.get_global_vars())
                lowered.append((threading.get_ident(), names))

    with tvm.transform.PassContext(instruments=[Threads()]):
        got = run_llvm(import_torch(model, x), x.numpy(), target=tvm.target.Target(LEVELS))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    v4 = [names for _, names in lowered if any("x86_64_v4_packed" in n for n in names)]
    assert v4, f"no x86-64-v4 kernel lowered: {lowered}"
    assert all(n.endswith(("_v4", "_v4_packed1")) for n in v4[0]), f"lowered with others: {v4}"
    assert len({thread for thread, _ in lowered}) > 1, f"one thread lowered every level: {lowered}"


def test_weight_packing_is_compiled_in_one_module(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    model, x = _model()
    builds: list[list[str]] = []
    build = tvm.tirx.build

    def counted(mod, *args, **kwargs):  # type: ignore[no-untyped-def]
        builds.append(sorted(g.name_hint for g in mod.get_global_vars()))
        return build(mod, *args, **kwargs)

    monkeypatch.setattr(tvm.tirx, "build", counted)
    with tvm.target.Target(LEVELS):
        relax.get_pipeline("default")(import_torch(model, x))
    packs = [names for names in builds if any("_pack" in n for n in names)]
    assert packs, f"no weight blocked at build time: {builds}"
    assert len(packs) == 1, f"the weights' copies compiled {len(packs)} times: {builds}"
    # 3 weights, each blocked once for the levels whose tiles share a layout, else per level
    assert len(packs[0]) >= 3, packs


def test_a_kernel_folded_after_versioning_is_computed_on_this_cpu() -> None:
    """T5's relative position buckets (a fused `full`, `minimum`, `where` on constants) become
    foldable only once fused, after each kernel was copied per level with its level's target:
    the fold compiled the copy for that level, in a module of its own, and found no function
    to call ("Module has no function '...__x86_64'"); T5 and BLOOM did not build portable.
    Stock builds the level list's generic code and runs."""
    hf = transformers()
    torch.manual_seed(0)
    config = hf.T5Config(vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=1, num_heads=4)
    model = hf.T5EncoderModel(config).eval()
    ids = torch.randint(0, 64, (1, 12))

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.model(input_ids=x).last_hidden_state

    wrapped = Encoder().eval()
    with torch.no_grad():
        want = wrapped(ids).numpy()
    got = run_llvm(import_torch(wrapped, ids), ids.numpy(), target=tvm.target.Target(LEVELS))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)

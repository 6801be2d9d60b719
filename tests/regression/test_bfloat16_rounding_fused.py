"""Patch: on CPU, a bfloat16 linear layer and the rounding of its float32 result to bfloat16 are
one kernel, as is a float32 chain (a norm, an activation) and its rounding; the results are
PyTorch's.

The PyTorch importer emits a bfloat16 linear layer as a matmul of bfloat16 inputs accumulated in
float32, then a cast to bfloat16, and computes a norm or an activation in float32 between two
casts. The fork's fusion left every kernel over bfloat16 out of its groups, so each cast was a
kernel of its own: a pass over memory, an allocation and a call each (a small bfloat16 Llama:
133 kernel calls against 111 with the patch; 49 in float32). A kernel that reads a bfloat16
value still joins no group: inside one kernel TIR's bfloat16 legalization computes in float32
and drops a rounding between two operations (float32(bfloat16(x)) becomes x), so a fused cast
and widening would give other numbers than PyTorch's. Stock 0.26.0 fuses nothing on CPU, so the
structural check fails there.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import tvm

from .relaxrun import host_target, kernels, lower_default, numpy_of, run_llvm
from .test_cpu_bfloat16_kernels import bfloat16_block


def _module() -> tuple[torch.nn.Module, tvm.IRModule]:
    """The bfloat16 Llama MLP block of the vectorizing patch's test, static (16 tokens)."""
    return bfloat16_block(False)


def _dtypes(func) -> list[str]:
    return [str(p.dtype) for p in func.params]


def test_no_kernel_only_rounds_float32_to_bfloat16() -> None:
    _, mod = _module()
    found = kernels(lower_default(mod, "llvm"))
    # a kernel that reads float32 and writes bfloat16 and does nothing else: a cast left alone
    rounding = [n for n, f in found.items() if _dtypes(f) == ["float32", "bfloat16"]]
    rounding = [n for n in rounding if re.fullmatch(r"cast\d*", n)]
    assert not rounding, f"roundings to bfloat16 left as kernels: {rounding} of {sorted(found)}"
    dense = [n for n, f in found.items() if "matmul" in n]
    assert dense and all("cast" in n and _dtypes(found[n])[-1] == "bfloat16" for n in dense), dense


@pytest.mark.parametrize("target", ["llvm", "host"])
def test_block_matches_pytorch(target: str) -> None:
    model, mod = _module()
    x = torch.randn(1, 16, 64, dtype=torch.bfloat16)
    got = run_llvm(mod, numpy_of(x), target=host_target() if target == "host" else "llvm")
    with torch.no_grad():
        want = model(x).float().numpy()
    assert str(got.dtype) == "bfloat16"
    # bfloat16's precision: a rounding is 2**-8 of a value
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got.astype("float32"), want, rtol=2**-7, atol=2**-8 * scale)


def test_a_bfloat16_static_cache_lm_builds_and_matches_pytorch() -> None:
    """transformers' static-cache export of a bfloat16 Llama (the route generation takes): its
    shape kernels take scalar parameters, which the fusion must pass over."""
    from tvm.relax.frontend.torch import from_exported_program

    from . import hf

    torch.manual_seed(0)
    model = hf.decoder_lm("llama", initializer_range=0.2).to(torch.bfloat16)  # after the shim
    from transformers.integrations.executorch import TorchExportableModuleForDecoderOnlyLM

    model.generation_config.cache_implementation = "static"
    model.generation_config.cache_config = {"batch_size": 1, "max_cache_len": 32}
    prompt = torch.randint(0, 512, (1, 7))
    seq = torch.export.Dim("seq", max=32)
    module = TorchExportableModuleForDecoderOnlyLM(model)
    exported = module.export(
        input_ids=prompt,
        cache_position=torch.arange(7),
        dynamic_shapes={"input_ids": {1: seq}, "cache_position": {0: seq}},
    )
    mod = from_exported_program(exported)  # stock stops here, at the import
    from tvm.relax.frontend.torch import StatefulModule

    lm = StatefulModule(mod, target="llvm")
    (logits,) = lm(prompt, torch.arange(7))
    got = logits.numpy().astype("float32")
    with torch.no_grad():  # the same static-cache module, in PyTorch
        want = module.model(input_ids=prompt, cache_position=torch.arange(7)).float().numpy()
    # bfloat16's precision through the layers: a few roundings of 2**-8 each (the unfused
    # build's logits are the same bit for bit)
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=2**-6, atol=2**-6 * scale)

"""Patch: attention over a key/value cache reads the cache where it lies, one token at a time.

An LLM's attention (transformers' `repeat_kv`, then `scaled_dot_product_attention`) multiplies
the queries by the key cache expanded to every query head, transposed and scaled, and the
scores by the value cache expanded the same way. Each of those moves was a kernel of its own
that copied the whole cache, on every decode step, for a matmul that then read each element
once: 15% of a decode step of SmolLM-135M's shape at a 528-token cache. On the fork each
attention matmul is one kernel that reads the cache itself (`k[0, h // 3, j, d]`) for one
token, and copies it in the matmul's layout first for rows of tokens (a prefill), as before.
Stock 0.26.0 runs each move as a kernel of its own, so the check that no kernel but the two
matmuls reads the cache fails there.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
import tvm
from tvm import tirx
from tvm.relax.frontend.torch import from_exported_program

from .relaxrun import host_target, kernels, lower_default, nodes, numpy_of

HEADS, DIM, CACHE = 9, 64, 96


class _Attention(torch.nn.Module):
    """One attention step over a static cache, as transformers' Llama computes it."""

    def forward(self, q, k, v, mask):
        groups = HEADS // k.shape[1]
        k = k[:, :, None].expand(-1, -1, groups, -1, -1).reshape(1, HEADS, CACHE, DIM)
        v = v[:, :, None].expand(-1, -1, groups, -1, -1).reshape(1, HEADS, CACHE, DIM)
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def _inputs(tokens: int, kv_heads: int, dtype: torch.dtype, seed: int = 0) -> list:
    generator = torch.Generator().manual_seed(seed)
    shapes = [(1, HEADS, tokens, DIM), (1, kv_heads, CACHE, DIM), (1, kv_heads, CACHE, DIM)]
    tensors = [torch.randn(shape, generator=generator) for shape in shapes]
    mask = torch.randn((1, 1, tokens, CACHE), generator=generator)
    return [t.to(dtype) for t in [*tensors, mask]]


@functools.cache
def _module(kv_heads: int, dtype: torch.dtype = torch.float32) -> tvm.IRModule:
    tokens = torch.export.Dim("tokens", min=1, max=CACHE)
    with torch.no_grad():
        exported = torch.export.export(
            _Attention().eval(),
            tuple(_inputs(8, kv_heads, dtype)),
            dynamic_shapes=({2: tokens}, None, None, {2: tokens}),
        )
    return from_exported_program(exported, keep_params_as_input=False)


@functools.cache
def _cache_readers(kv_heads: int, dtype: torch.dtype) -> dict[str, tirx.PrimFunc]:
    """The lowered kernels that take a buffer of the cache's shape."""
    shape = [1, kv_heads, CACHE, DIM]
    return {
        name: func
        for name, func in kernels(lower_default(_module(kv_heads, dtype), "llvm")).items()
        if any(
            isinstance(p, tirx.Buffer)
            and [int(d) for d in p.shape if isinstance(d, tirx.IntImm)] == shape
            and len(p.shape) == 4
            for p in func.params
        )
    }


def _reduces(block: tirx.SBlock) -> bool:
    return any(iv.iter_type == tirx.IterVar.CommReduce for iv in block.iter_vars)


CALLS = [(3, torch.float32), (9, torch.float32), (3, torch.bfloat16)]
CALL_IDS = ["grouped-query", "multi-head", "grouped-query-bfloat16"]


@pytest.mark.parametrize(("kv_heads", "dtype"), CALLS, ids=CALL_IDS)
def test_only_the_attention_matmuls_read_the_cache(kv_heads: int, dtype: torch.dtype) -> None:
    readers = _cache_readers(kv_heads, dtype)
    copies = sorted(
        name
        for name, func in readers.items()
        if not any(_reduces(block) for block in nodes(func, tirx.SBlock))
    )
    assert len(readers) == 2 and not copies, (
        f"kernels that read the cache: {sorted(readers)}; of those, {copies} only copy it "
        "(expanded to every head, transposed) for a matmul to read, on every decode step"
    )


@pytest.mark.parametrize(("kv_heads", "dtype"), CALLS, ids=CALL_IDS)
def test_one_token_reads_the_cache_in_the_matmul(kv_heads: int, dtype: torch.dtype) -> None:
    for name, func in _cache_readers(kv_heads, dtype).items():
        cache = next(p for p in func.params if len(p.shape) == 4)
        branches = nodes(func, tirx.IfThenElse)
        one_token = branches[0].else_case if branches else func.body
        reads = [
            region
            for block in nodes(one_token, tirx.SBlock)
            if _reduces(block)
            for region in block.reads
            if region.buffer.same_as(cache)
        ]
        assert reads, f"{name}'s matmul, for one token, reads no cache but a copy\n{func}"


@pytest.mark.parametrize("tokens", [1, 5, 6, 40])
@pytest.mark.parametrize("kv_heads", [3, 9], ids=["grouped-query", "multi-head"])
@pytest.mark.parametrize("target", ["llvm", "host"])
def test_results_match_pytorch(tokens: int, kv_heads: int, target: str) -> None:
    inputs = _inputs(tokens, kv_heads, torch.float32, seed=tokens)
    vm = tvm.relax.VirtualMachine(
        tvm.compile(_module(kv_heads), target=host_target() if target == "host" else "llvm"),
        tvm.cpu(),
    )
    got = vm["main"](*[tvm.runtime.tensor(t.numpy()) for t in inputs])
    got = (got if isinstance(got, tvm.runtime.Tensor) else got[0]).numpy()
    with torch.no_grad():
        want = _Attention()(*inputs).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("tokens", [1, 6])
def test_bfloat16_results_match_pytorch(tokens: int) -> None:
    # the importer computes it in float32: the matmuls read the bfloat16 cache widened
    inputs = _inputs(tokens, 3, torch.bfloat16, seed=tokens)
    vm = tvm.relax.VirtualMachine(tvm.compile(_module(3, torch.bfloat16), target="llvm"), tvm.cpu())
    got = vm["main"](*[tvm.runtime.tensor(numpy_of(t)) for t in inputs])
    got = (got if isinstance(got, tvm.runtime.Tensor) else got[0]).numpy().astype("float32")
    with torch.no_grad():
        want = _Attention()(*inputs).float().numpy()
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)

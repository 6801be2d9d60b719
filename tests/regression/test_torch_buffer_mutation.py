"""Patch: buffers a program updates are state (BUGS: from_exported_program dropped the new
values of mutated buffers and bound their first values as constants, so a module with a
running total, running statistics or a KV cache computed every call as the first one).

"main" takes each mutated buffer after the user inputs and returns its new value after the
user outputs ("mutated_buffers" and "mutated_buffer_values" attributes name them and hold
their first values); fed back call after call, the outputs and the state follow PyTorch.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
import tvm
from tvm import relax


class Total(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("total", torch.zeros(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.total.add_(x)
        return self.total * 2


def _run_calls(module: torch.nn.Module, calls: list[torch.Tensor]) -> None:
    """The module called once per input, its program's state fed back as the fork's "main"
    expects it (a program that carries none is called as stock's is: its input alone), each
    output against PyTorch's; then the state it carried against the buffers that PyTorch's
    export records the module updates. PyTorch runs a copy: an import may bind the exported
    module's buffers without copying them, and must not see eager's updates through them."""
    from tvm.relax.frontend.torch import from_exported_program

    reference = copy.deepcopy(module)
    exported = torch.export.export(module, (calls[0],))
    signature = exported.run_decompositions().graph_signature
    updated = sorted(signature.buffers_to_mutate.values())
    mod = from_exported_program(exported)
    attrs = mod["main"].attrs
    names = list(attrs.get("mutated_buffers", [])) if attrs is not None else []
    values = attrs.get("mutated_buffer_values", []) if attrs is not None else []
    state = [tvm.runtime.tensor(v.numpy()) for v in values]
    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
    buffers = dict(reference.named_buffers())
    for x in calls:
        result = vm["main"](tvm.runtime.tensor(x.numpy()), *state)
        out, *state = result if isinstance(result, (tuple, list, tvm.ir.Array)) else [result]
        with torch.no_grad():
            expected = reference(x)
        np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
        for name, value in zip(names, state, strict=True):
            np.testing.assert_allclose(value.numpy(), buffers[name].numpy(), rtol=1e-5)
    assert sorted(names) == updated, f"the program drops the buffers it updates: {updated}"


def test_running_total_carries_from_call_to_call() -> None:
    _run_calls(Total(), [torch.ones(4), torch.arange(4.0), -torch.ones(4)])


def test_batch_norm_in_training_mode_updates_its_statistics() -> None:
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm2d(3, momentum=0.3).train()
    _run_calls(bn, [torch.randn(2, 3, 4, 4), torch.randn(2, 3, 4, 4) * 2 + 1])

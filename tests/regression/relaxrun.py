"""Running models in regression tests: import from PyTorch, compile for llvm, run on the CPU."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
import tvm
from tvm import relax
from tvm.relax.frontend.torch import from_exported_program


def import_torch(model: torch.nn.Module, example: torch.Tensor) -> tvm.IRModule:
    """`model` (in eval mode) through torch.export and the Relax importer, params as constants."""
    with torch.no_grad():
        exported = torch.export.export(model.eval(), (example,))
    return from_exported_program(exported, keep_params_as_input=False)


def run_llvm(
    mod: tvm.IRModule,
    *args: np.ndarray,
    instrument: Callable[..., object] | None = None,
    target: str | tvm.target.Target = "llvm",
) -> np.ndarray:
    """`main` of `mod`, compiled with tvm.compile(target=`target`, "llvm" by default), on
    `args`: its (first) output.

    `instrument`, if given, is the VM's instrument (called before and after each call it
    makes: func, name, before_run, ret_value, *args)."""
    vm = relax.VirtualMachine(tvm.compile(mod, target=target), tvm.cpu())
    if instrument is not None:
        vm.set_instrument(instrument)
    out = vm["main"](*[tvm.runtime.tensor(a) for a in args])
    return (out if isinstance(out, tvm.runtime.Tensor) else out[0]).numpy()

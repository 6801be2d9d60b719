"""Benchmark (not a test): one TVM Python module as another file has it vs as installed.

For a Python patch's speed: compiles each named case of a torch-module suite (as
`profile_model.py` loads it, through torch.export) twice in one process, once with the
functions of the installed module `--module` replaced by those of `--old` (the module's file
before the patch, e.g. `git -C CHECKOUT show fork~1:python/tvm/s_tir/dlight/cpu/contraction.py`)
and once as installed, then runs the two alternately ROUNDS times. Prints the CPU model and,
per case, each side's median and minimum, the ratio new / old, and each side's largest
difference from PyTorch eager's output. Every function the old file defines, and every method
of a class it defines, replaces the installed one of that name, so the old ones call each other.
Run it with the fork venv's Python, 1 thread, on an otherwise idle machine:

    FORK=~/.cache/tvmfork/venvs/fork/bin/python
    $FORK scripts/bench_module_ab.py --module tvm.s_tir.dlight.cpu.contraction --old OLD.py \\
        torchvision regnet_x_400mf resnext50_32x4d [--target '{"kind":"llvm","mcpu":"haswell"}']
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import os
import statistics
import sys
import types
from collections.abc import Iterator

import _paths  # noqa: F401  (the conformance worker's folder on sys.path)
from casework.timing import samples_ms  # type: ignore[import-not-found]
from profile_model import SUITES, cpu_model, load_case


def _numpy(x: object) -> object:
    """A torch tensor as numpy, bfloat16 as ml_dtypes' bfloat16 (which TVM takes)."""
    import ml_dtypes
    import torch

    x = x.detach()  # type: ignore[attr-defined]
    if x.dtype == torch.bfloat16:
        return x.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return x.numpy()


@contextlib.contextmanager
def _old_functions(module: types.ModuleType, path: str) -> Iterator[None]:
    """The module's functions, and its classes' methods, replaced by those `path` defines,
    for the block's duration."""
    old = types.ModuleType(f"{module.__name__}_old")
    old.__package__ = module.__package__
    with open(path, encoding="utf-8") as f:
        exec(compile(f.read(), path, "exec"), old.__dict__)
    # (namespace, name, installed value, old value) of each replaced function or method
    swaps = []
    for name, value in old.__dict__.items():
        mine = module.__dict__.get(name)
        if getattr(value, "__module__", None) != old.__name__ or mine is None:
            continue
        if isinstance(value, types.FunctionType) and isinstance(mine, types.FunctionType):
            swaps.append((module.__dict__, name, mine, value))
        elif isinstance(value, type) and isinstance(mine, type):
            for attr, method in vars(value).items():
                if isinstance(method, (types.FunctionType, staticmethod, classmethod)):
                    if attr in vars(mine):
                        swaps.append((mine, attr, vars(mine)[attr], method))
    if not swaps:
        raise SystemExit(f"{path} defines no function or method that {module.__name__} has")
    for space, name, _, value in swaps:
        _set(space, name, value)
    try:
        yield
    finally:
        for space, name, value, _ in swaps:
            _set(space, name, value)


def _set(space, name: str, value) -> None:  # type: ignore[no-untyped-def]
    if isinstance(space, dict):
        space[name] = value
    else:
        setattr(space, name, value)


def _first(value):  # type: ignore[no-untyped-def]
    """A model's first output: the value itself, or the first of a tuple, list or dict."""
    while not hasattr(value, "numpy"):
        value = next(iter(value.values())) if isinstance(value, dict) else value[0]
    return value


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--module", required=True, help="a TVM Python module, e.g. tvm.relax.x")
    ap.add_argument("--old", required=True, help="that module's file before the change")
    ap.add_argument("--target", default="host", help="host (the default) or a TVM target")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("suite", choices=sorted(SUITES))
    ap.add_argument("cases", nargs="+")
    a = ap.parse_args()
    os.environ.setdefault("TVM_NUM_THREADS", "1")

    import numpy as np
    import torch
    import tvm
    from tvm import relax
    from tvm.relax.frontend.torch import from_exported_program

    module = importlib.import_module(a.module)
    target = tvm.target.Target.from_device("cpu") if a.target == "host" else a.target
    torch.set_num_threads(int(os.environ["TVM_NUM_THREADS"]))
    print(f"CPU {cpu_model()}; target {target}; TVM_NUM_THREADS {os.environ['TVM_NUM_THREADS']}")
    for name in a.cases:
        torch.manual_seed(0)
        model, inputs = load_case(a.suite, name)[:2]
        with torch.no_grad():
            exported = torch.export.export(model.eval(), tuple(inputs))
            expected = model(*inputs)
        mod = from_exported_program(exported, keep_params_as_input=False)
        expected = _first(expected)
        args = [tvm.runtime.tensor(_numpy(x)) for x in inputs]
        vms = {}
        with _old_functions(module, a.old):
            vms["old"] = relax.VirtualMachine(tvm.compile(mod, target=target), tvm.cpu())
        vms["new"] = relax.VirtualMachine(tvm.compile(mod, target=target), tvm.cpu())
        error = {}
        for side, vm in vms.items():
            out = vm["main"](*args)
            out = _first(out)
            got = out.numpy().astype("float32")
            error[side] = float(np.abs(got - expected.detach().float().numpy()).max())
        times = samples_ms(
            {side: functools.partial(vm["main"], *args) for side, vm in vms.items()}, a.rounds
        )
        old, new = (statistics.median(times[s]) for s in ("old", "new"))
        print(
            f"{a.suite}/{name}: old {old:.2f} ms (min {min(times['old']):.2f}), new {new:.2f} ms"
            f" (min {min(times['new']):.2f}), new / old {new / old:.3f}; largest difference"
            f" from PyTorch: old {error['old']:.3g}, new {error['new']:.3g}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

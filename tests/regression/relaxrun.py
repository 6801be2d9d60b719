"""Running models in regression tests: import from PyTorch, compile for llvm, run on the CPU;
and looking into the kernels the default pipeline lowers them to."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import tvm
import tvm_ffi
from tvm import relax, tirx
from tvm.relax.frontend.torch import from_exported_program

# the x86-64 psABI levels of a portable build, lowest first (the conformance lane's list is
# python/tvmfork/conformance/casework/targets.py's: these tests run without tvmfork)
X86_LEVELS = "x86-64,x86-64-v3,x86-64-v4"
PORTABLE = {"kind": "llvm", "mcpu": X86_LEVELS}
# AVX2 (Haswell): 16 vector registers of 8 float32 lanes; the schedule tests' fixed x86 target
AVX2 = {"kind": "llvm", "mtriple": "x86_64-linux-gnu", "mcpu": "haswell"}
# AVX-512 (Skylake-X): 32 vector registers of 16 float32 lanes
AVX512 = {"kind": "llvm", "mtriple": "x86_64-linux-gnu", "mcpu": "skylake-avx512"}


def host_target() -> tvm.target.Target:
    """This machine's ISA: `Target.from_device("cpu")`, with the features its CPU name implies
    and the host lacks turned off, as the fork's from_device does. Stock's enables them: a VM
    that hides AVX-512 from a Zen 4 then dies on an illegal instruction
    (test_host_target_features.py). The schedule patches' tests want the host's ISA whichever
    from_device they run with."""
    target = tvm.target.Target.from_device("cpu")
    host = tvm_ffi.get_global_func("tvm.codegen.llvm.GetHostCPUFeatures")()
    implied = tvm.target.codegen.llvm_get_cpu_features(target)
    lacking = sorted(f for f, present in host.items() if not present and f in implied)
    if not lacking:
        return target
    config = {"kind": "llvm", "mtriple": str(target.attrs["mtriple"])}
    config["mcpu"] = str(target.attrs["mcpu"])
    config["mattr"] = [str(a) for a in target.attrs.get("mattr", [])] + [f"-{f}" for f in lacking]
    return tvm.target.Target(config)


def import_torch(
    model: torch.nn.Module, example: torch.Tensor, dynamic_shapes: tuple | None = None
) -> tvm.IRModule:
    """`model` (in eval mode) through torch.export (with `dynamic_shapes`, as torch.export
    takes them) and the Relax importer, params as constants."""
    with torch.no_grad():
        exported = torch.export.export(model.eval(), (example,), dynamic_shapes=dynamic_shapes)
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


def kernel_calls() -> tuple[list[tuple[str, list[tuple[int, ...]]]], Callable[..., object]]:
    """A list, and a VM instrument (`run_llvm(..., instrument=...)`) that appends to it each
    kernel the VM calls (not its builtins): the name and the shapes of its arguments."""
    seen: list[tuple[str, list[tuple[int, ...]]]] = []

    def record(func, name, before_run, ret_value, *args):  # the VM instrument signature
        if before_run and not str(name).startswith("vm.builtin"):
            seen.append((str(name), [tuple(a.shape) for a in args if hasattr(a, "shape")]))

    return seen, record


def run_outputs(mod: tvm.IRModule, *args: np.ndarray) -> list[np.ndarray]:
    """`main` of `mod` compiled for "llvm" on `args`: every output, flattened in order."""
    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
    out = vm["main"](*[tvm.runtime.tensor(a) for a in args])

    def flat(value: object) -> list[np.ndarray]:
        if isinstance(value, tvm.runtime.Tensor):
            return [value.numpy()]
        return [x for v in value for x in flat(v)]  # type: ignore[attr-defined]

    return flat(out)


class Lambda(torch.nn.Module):
    """A module whose forward is `f` (one op under test, written as a lambda)."""

    def __init__(self, f: Callable[..., object]) -> None:
        super().__init__()
        self.f = f

    def forward(self, *args: torch.Tensor) -> object:
        return self.f(*args)


def eager_and_tvm(
    model: torch.nn.Module, *args: torch.Tensor
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(TVM's outputs, PyTorch eager's) of `model` on `args`: exported with torch.export,
    imported with from_exported_program, compiled for "llvm" (`run_outputs`). A model's one
    tensor is one output; a tuple or list of them, one each."""
    with torch.no_grad():
        out = model(*args)
        want = [numpy_of(t) for t in ([out] if isinstance(out, torch.Tensor) else out)]
        mod = from_exported_program(torch.export.export(model, args))
    return run_outputs(mod, *[numpy_of(a) for a in args]), want


def assert_outputs_match(
    got: list[np.ndarray], want: list[np.ndarray], rtol: float = 0.0, atol: float = 0.0
) -> None:
    """TVM's outputs are PyTorch's: the same dtypes and shapes, and values within `rtol` and
    `atol` (exact by default; NaNs where PyTorch has them)."""
    assert [(g.dtype, g.shape) for g in got] == [(w.dtype, w.shape) for w in want]
    for g, w in zip(got, want, strict=True):
        if rtol == atol == 0.0:  # bools too, which allclose cannot subtract
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def numpy_of(x: torch.Tensor) -> np.ndarray:
    """A torch tensor as numpy: bfloat16 as ml_dtypes' bfloat16, which TVM takes and gives."""
    x = x.detach()
    if x.dtype == torch.bfloat16:
        import ml_dtypes

        return x.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return x.numpy()


def export_levels_and_host(
    model: torch.nn.Module, x: torch.Tensor, levels: str, out: Path
) -> dict[str, Path]:
    """`model` built for the x86-64 `levels` (an mcpu list) and for the host's CPU, each
    exported to a library in `out`, with its input and PyTorch's output saved beside them:
    the paths, by "levels", "host", "x" and "want"."""
    with torch.no_grad():
        want = model(x).numpy()
    mod = import_torch(model, x)
    paths = {"levels": out / "levels.so", "host": out / "host.so"}
    targets = {
        "levels": tvm.target.Target({"kind": "llvm", "mcpu": levels}),
        "host": host_target(),
    }
    for name, path in paths.items():
        tvm.compile(mod, target=targets[name]).export_library(str(path))
    np.save(out / "x.npy", x.numpy())
    np.save(out / "want.npy", want)
    return {**paths, "x": out / "x.npy", "want": out / "want.npy"}


def lower_default(mod: tvm.IRModule, target: str | dict | tvm.target.Target) -> tvm.IRModule:
    """`mod` through the default Relax pipeline for `target` (a target's JSON dict or name)."""
    with tvm.target.Target(target):
        return relax.get_pipeline("default")(mod)


def assembly(func: tirx.PrimFunc, target: str | dict | tvm.target.Target) -> str:
    """The assembly LLVM emits for the one kernel `func` (as scheduled) on `target`."""
    return tvm.tirx.build(func.with_attr("global_symbol", "main"), target=target).inspect_source(
        "asm"
    )


def lowered_tir(
    build: Callable[[], object], after: str = "tirx.UnrollLoop"
) -> dict[str, tirx.PrimFunc]:
    """The PrimFuncs as the TIR pipeline leaves them after the pass `after`, captured while
    `build()` runs (a tvm.compile): the code the LLVM code generator will see, vectorized and
    unrolled."""
    seen: dict[str, tirx.PrimFunc] = {}

    @tvm.instrument.pass_instrument
    class _Grab:
        def run_after_pass(self, mod: tvm.IRModule, info: tvm.transform.PassInfo) -> None:
            if info.name == after:
                seen.update(kernels(mod))

    with tvm.transform.PassContext(instruments=[_Grab()]):
        build()
    return seen


def buffer_loads(func: tirx.PrimFunc) -> list[tirx.BufferLoad]:
    """The loads of `func`, in visiting order."""
    return nodes(func, tirx.BufferLoad)


def kernels(mod: tvm.IRModule) -> dict[str, tirx.PrimFunc]:
    """The PrimFuncs of `mod`, by name."""
    return {
        gvar.name_hint: func
        for gvar, func in mod.functions_items()
        if isinstance(func, tirx.PrimFunc)
    }


def vector_extents(func: tirx.PrimFunc) -> list[int]:
    """The extents of the vectorized loops of `func`, in visiting order."""
    return [int(loop.extent) for loop in _loops(func) if loop.kind == tirx.ForKind.VECTORIZED]


def block_names(func: tirx.PrimFunc) -> list[str]:
    """The names of the blocks of `func`, in visiting order."""
    return [block.name_hint for block in nodes(func, tirx.SBlock)]


def unrolled_rows(stmt: tirx.Stmt) -> list[tirx.For]:
    """The unrolled loops of more than one iteration in `stmt` (a register tile's rows), in
    visiting order."""
    found: list = []

    def visit(node) -> None:
        if isinstance(node, tirx.For) and node.kind == tirx.ForKind.UNROLLED:
            if int(node.extent) > 1:
                found.append(node)

    tirx.stmt_functor.post_order_visit(stmt, visit)
    return found


def _loops(func: tirx.PrimFunc) -> list[tirx.For]:
    return nodes(func, tirx.For)


def nodes(where: tirx.PrimFunc | tirx.Stmt | tirx.PrimExpr, kind: type) -> list:
    """The nodes of type `kind` in `where` (a statement or an expression, or a function's
    body), in visiting order."""
    found: list = []
    tirx.stmt_functor.post_order_visit(
        where.body if isinstance(where, tirx.PrimFunc) else where,
        lambda n: found.append(n) if isinstance(n, kind) else None,
    )
    return found

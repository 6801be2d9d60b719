"""PyTorch's own op tests as conformance cases: every op of
`torch.testing._internal.common_methods_invocations.op_db`, its sample inputs (seeded, the
first N), in each dtype the op supports on CPU among `DTYPES`.

`gen_opinfo(DIR, N)` writes each sample once per torch version into the cache (`torch.save`
of its input, args and kwargs) and an index, `cases.json`, as `onnx_cases` does for ONNX's
node cases; a sample that cannot be a case (not serializable, random, a non-strided tensor)
is listed with the reason as `skip`. `run_opinfo(case)` wraps the op in a module whose inputs
are the sample's tensors (every other argument a constant), exports it with torch.export,
imports, compiles and runs it, and compares with eager at the dtype's precision.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .backends import checked, compile_case
from .case import Case, CaseFailed, NotRun, export_reason
from .compare import compare, leaves, to_numpy
from .judge import NO_LESS_ACCURATE, Check

# the dtypes a case is made in, where the op supports them on CPU
DTYPES = ("float32", "float64", "int64", "bool", "bfloat16", "float16")
# ops whose outputs include indices into a dimension of the input, and where that dimension
# is among (input, args, kwargs): the argument's position in args, its keyword, its default.
# Among tied values any index is right (PyTorch itself does not promise which), so an index
# that differs from eager's is accepted where it points at an equal value.
INDEX_DIMS: dict[str, tuple[int, str, int | None]] = {
    "sort": (0, "dim", -1),
    "argsort": (0, "dim", -1),
    "msort": (-1, "", 0),
    "topk": (1, "dim", -1),
    "max.reduction_with_dim": (0, "dim", None),
    "min.reduction_with_dim": (0, "dim", None),
    "argmax": (0, "dim", None),
    "argmin": (0, "dim", None),
    "kthvalue": (1, "dim", -1),
    "median": (0, "dim", None),
    "nanmedian": (0, "dim", None),
    "mode": (0, "dim", -1),
    "cummax": (0, "dim", None),
    "cummin": (0, "dim", None),
}


def case_name(op: Any, dtype: str, index: int) -> str:
    """`OP[.VARIANT].DTYPE.INDEX`, e.g. `nn.functional.selu.float32.0`."""
    op_name = f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name
    return f"{op_name}.{dtype}.{index}"


def op_key(op: Any) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def _tensors(value: Any) -> list[Any]:
    import torch
    from torch.utils._pytree import tree_leaves

    return [x for x in tree_leaves(value) if isinstance(x, torch.Tensor)]


def _why_not(op: Any, sample: Any) -> str:
    """Why this sample cannot be a case ("" when it can)."""
    import torch
    from torch.utils._pytree import tree_leaves, tree_map

    for leaf in tree_leaves((sample.input, sample.args, sample.kwargs)):
        if isinstance(leaf, torch.Tensor) and leaf.layout != torch.strided:
            return f"a {leaf.layout} tensor argument: only strided tensors are run"
        if callable(leaf) and not isinstance(leaf, torch.Tensor):
            return "an argument is a function"
    if not _tensors(sample.input) and not _tensors((sample.args, sample.kwargs)):
        return "no tensor argument"
    # op_db's random ops reseed in `wrapper_set_seed` on each call: looked through here, so
    # that two calls with other seeds show the randomness (no compiler reproduces torch's RNG)
    scope = getattr(op.op, "__globals__", {})
    seeded = scope.get("wrapper_set_seed")
    try:
        if seeded is not None:
            scope["wrapper_set_seed"] = lambda fn, *args, **kwargs: fn(*args, **kwargs)
        runs = []
        for seed in (1, 2, 3, 4):  # on copies: an in-place op (exponential_) returns its input
            x, args, kwargs = tree_map(
                lambda v: v.clone() if isinstance(v, torch.Tensor) else v,
                (sample.input, sample.args, sample.kwargs),
            )
            torch.manual_seed(seed)
            with torch.no_grad():
                runs.append(leaves(op.op(x, *args, **kwargs)))
    except Exception as exc:
        return f"eager PyTorch raises on it: {type(exc).__name__}"
    finally:
        if seeded is not None:
            scope["wrapper_set_seed"] = seeded
    differ = any(compare(run, runs[0], 0, 0, 0)[0] for run in runs[1:])
    if differ or op.name.startswith(("empty", "new_empty")):
        return "random or uninitialized output (eager runs with other seeds differ)"
    return ""


def gen_opinfo(out: Path, per_dtype: int) -> int:
    """Writes the first `per_dtype` samples of every op in every dtype of DTYPES it supports on
    CPU into `out`, and `out/cases.json` (name, op, dtype, sample file, or skip: why)."""
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    out.mkdir(parents=True, exist_ok=True)
    cases: list[dict[str, Any]] = []
    for op in op_db:
        supported = {str(d).removeprefix("torch.") for d in op.supported_dtypes("cpu")}
        for dtype in (d for d in DTYPES if d in supported):
            torch.manual_seed(0)
            try:
                samples = op.sample_inputs("cpu", getattr(torch, dtype), requires_grad=False)
                taken = [s for _, s in zip(range(per_dtype), samples, strict=False)]
            except Exception as exc:
                name = case_name(op, dtype, 0)
                why = f"its sample inputs raise: {type(exc).__name__}"
                cases.append({"name": name, "op": op_key(op), "dtype": dtype, "skip": why})
                continue
            for i, sample in enumerate(taken):
                entry = {"name": case_name(op, dtype, i), "op": op_key(op), "dtype": dtype}
                why = _why_not(op, sample)
                if not why:
                    path = out / f"{entry['name']}.pt"
                    try:
                        torch.save(
                            {"input": sample.input, "args": sample.args, "kwargs": sample.kwargs},
                            path,
                        )
                        entry["sample"] = str(path)
                    except Exception as exc:
                        why = f"the sample cannot be saved: {type(exc).__name__}"
                if why:
                    entry["skip"] = why
                cases.append(entry)
    (out / "cases.json").write_text(json.dumps(cases, indent=1))
    return 0


_OPS: dict[str, Any] = {}


def find_op(key: str) -> Any:
    if not _OPS:
        from torch.testing._internal.common_methods_invocations import op_db

        _OPS.update({op_key(op): op for op in op_db})
    if key not in _OPS:
        raise CaseFailed(f"no op {key!r} in this torch's op_db")
    return _OPS[key]


def wrap(fn: Any, sample: dict[str, Any]) -> tuple[Any, tuple[Any, ...]]:
    """A module calling `fn(input, *args, **kwargs)` whose inputs are the sample's tensors (in
    pytree order); every other leaf is a constant of the program."""
    import torch
    from torch.utils._pytree import tree_flatten, tree_unflatten

    flat, structure = tree_flatten((sample["input"], sample["args"], sample["kwargs"]))
    where = [i for i, x in enumerate(flat) if isinstance(x, torch.Tensor)]

    class Op(torch.nn.Module):  # type: ignore[misc]
        def forward(self, *tensors: Any) -> Any:
            values = list(flat)
            for i, t in zip(where, tensors, strict=True):
                values[i] = t
            x, args, kwargs = tree_unflatten(values, structure)
            return fn(x, *args, **kwargs)

    return Op(), tuple(flat[i] for i in where)


def python_scalars(result: Any, inputs: tuple[Any, ...]) -> list[Any]:
    """Eager's result flattened to arrays, a Python number (`Tensor.item()`) as a 0-d array of
    the tensor's dtype it came from (the program's output is that tensor's)."""
    import numpy as np
    import torch
    from torch.utils._pytree import tree_leaves

    first = to_numpy(inputs[0]).dtype if inputs else None
    out = []
    for leaf in tree_leaves(result):
        if isinstance(leaf, torch.Tensor):
            out.append(to_numpy(leaf))
        elif isinstance(leaf, bool | int | float) and first is not None:
            out.append(np.asarray(leaf).astype(first))
        else:
            out.extend(leaves(leaf))
    return out


def run_opinfo(case: Case) -> None:
    """One sample of one op: eager against torch.export -> from_exported_program -> VM."""
    import torch
    from tvm.relax.frontend.torch import from_exported_program

    spec = case.spec
    op = find_op(spec.name)
    sample = torch.load(spec.data, weights_only=False)
    module, inputs = wrap(op.op, sample)
    with torch.no_grad():
        want = python_scalars(module(*[x.clone() for x in inputs]), inputs)
    case.enter("export")
    try:
        with torch.no_grad():
            exported = torch.export.export(module, tuple(x.clone() for x in inputs))
    except Exception as exc:  # PyTorch's own exporter, the same on both sides
        raise NotRun(f"torch.export refuses it: {export_reason(exc)}") from exc
    case.enter("import")
    mod = from_exported_program(exported)
    vm = compile_case(mod, case)
    x = sample["input"]
    x = to_numpy(x) if isinstance(x, torch.Tensor) else None
    half = any(str(t.dtype) in HALF for t in inputs)

    def fill(check: Check) -> None:
        check.exact = in_float64(module, inputs)

    check = Check(
        args=[to_numpy(t) for t in inputs],
        want=want,
        per_dtype=True,
        ties=tie_axis(spec.name, x, sample["args"], sample["kwargs"]),
        fallback=NO_LESS_ACCURATE if half else "",
        fill=fill if half else None,
    )
    checked(case, vm, check)


HALF = ("torch.float16", "torch.bfloat16")


def in_float64(module: Any, inputs: tuple[Any, ...]) -> list[Any] | None:
    """The sample computed in float64 (half-precision inputs widened): the exact result a
    half-precision one rounds; None where the op does not run so."""
    import torch

    try:
        with torch.no_grad():
            wide = [x.double() if str(x.dtype) in HALF else x.clone() for x in inputs]
            return leaves(module(*wide))
    except Exception:  # an op that takes only its dtype: no exact result to hold to
        return None


def tie_axis(
    key: str, x: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, int] | None:
    """(the input as float64, the dimension) along which the index outputs of an INDEX_DIMS
    op point (a flattened input where the op takes no dimension); None for other ops."""
    import numpy as np

    if key not in INDEX_DIMS or x is None:
        return None
    pos, keyword, default = INDEX_DIMS[key]
    dim = kwargs.get(keyword, args[pos] if 0 <= pos < len(args) else default)
    if not isinstance(dim, int) and dim is not None:
        return None
    x = np.asarray(x).astype(np.float64)
    if dim is None:
        x, dim = x.reshape(-1), 0
    if x.ndim == 0:
        return None
    return x, dim % x.ndim

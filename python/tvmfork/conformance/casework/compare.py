"""A case's result against its reference: both flattened to numpy arrays, then compared by
count, shape, dtype and values, as ONNX's runner checks them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .case import CaseFailed


def leaves(value: Any) -> list[Any]:
    """Flatten a TVM or torch result (tensor, tuple, list, dict) to numpy arrays, in order."""
    import numpy as np

    if type(value).__name__ == "Shape" and type(value).__module__.startswith("tvm"):
        # a shape value (R.shape, e.g. ONNX's Shape of a static input): ONNX's int64 tensor.
        # tvm_ffi's Shape is a tuple: without this it would be flattened into scalars
        return [np.array(tuple(value), dtype="int64")]
    if type(value).__name__ == "RPCObjectRef":
        raise CaseFailed(
            "the result holds a value TVM's RPC cannot bring back from the device (an object "
            "such as a shape, not a tensor): it cannot be compared"
        )
    if isinstance(value, dict):
        return [x for v in value.values() for x in leaves(v)]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in leaves(v)]
    if hasattr(value, "detach"):  # torch
        return [to_numpy(value)]
    if hasattr(value, "numpy"):  # tvm.runtime.Tensor
        return [value.numpy()]
    try:  # tvm ffi Array / Shape
        return [x for v in list(value) for x in leaves(v)]
    except TypeError:
        return [np.asarray(value)]


def to_numpy(x: Any) -> Any:
    """A torch tensor as a numpy array of its dtype: bfloat16 as ml_dtypes' (which TVM's
    tensors take and give), where numpy has none."""
    import torch

    x = x.detach()
    if x.dtype == torch.bfloat16:
        import ml_dtypes

        return x.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return x.numpy()


def nonfinite(got: Any, want: Any) -> str:
    """Where the two differ in non-finite values, by kind: NaN, +inf and -inf each exactly
    where the reference has them ("" when they agree). A reference of non-finite values only
    is compared so too."""
    import numpy as np

    kinds = (("NaN", np.isnan), ("+inf", np.isposinf), ("-inf", np.isneginf))
    for name, test in kinds:
        g, w = test(got), test(want)
        if not np.array_equal(g, w):
            return (
                f"{name} at {int((g & ~w).sum())} element(s) where the reference has none, "
                f"missing at {int((w & ~g).sum())} where it has one"
            )
    return ""


# The least `rel_max` of a half-precision output: a model run in bfloat16 (8 bits of mantissa,
# a relative step of 2**-8 = 3.9e-3) or float16 (2**-11 = 4.9e-4) rounds each layer's
# results, and two correct runs that round in other places differ by a few steps of the
# largest value: 5 steps
HALF_REL_MAX = {"bfloat16": 5 * 2.0**-8, "float16": 5 * 2.0**-11}


def smallest_normal(dtype: Any) -> float:
    """The smallest positive normal number of a floating dtype (bfloat16's is float32's)."""
    import numpy as np

    if str(dtype) == "bfloat16":
        return float(np.finfo(np.float32).tiny)
    return float(np.finfo(dtype).tiny)


def compare(
    got: list[Any], want: list[Any], rtol: float, atol: float, rel_max: float
) -> tuple[str, float]:
    """('', worst relative error) when `got` matches `want` (else the problem, first): count,
    shape, dtype, then values. Integers, bools and strings must be equal; floats must have
    their NaN and infinities where the reference has them, by kind, and their finite values
    within `rtol`/`atol`, or, where `rel_max` > 0, max|got - want| / max|want| <= rel_max over
    the finite values (models with random weights, whose element-wise rtol fails on near-zero
    sums; max|want| taken as at least the dtype's smallest normal number), for a
    half-precision output at least HALF_REL_MAX of its dtype."""
    import numpy as np

    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}", 0.0
    worst = 0.0
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            return f"output {i}: shape {g.shape}, expected {w.shape}", worst
        if str(g.dtype) != str(w.dtype):
            return f"output {i}: dtype {g.dtype}, expected {w.dtype}", worst
        if w.dtype == object or w.dtype.kind in "biuUS":  # exact: an index is right or wrong
            if not np.array_equal(g, w):
                return f"output {i}: values differ ({int((g != w).sum())} of {w.size})", worst
            continue
        gf, wf = g.astype(np.float64), w.astype(np.float64)
        problem = nonfinite(gf, wf)
        if problem:
            return f"output {i}: {problem}", worst
        finite = np.isfinite(wf)
        gf, wf = gf[finite], wf[finite]
        if rel_max > 0:
            limit = max(rel_max, HALF_REL_MAX.get(str(w.dtype), 0.0))
            # relative to the output's scale, but not below the dtype's smallest normal number:
            # an output wholly subnormal carries no relative precision (a registry model whose
            # logits came out near 1e-42 was 16% off float64 in PyTorch itself)
            scale = max(float(np.abs(wf).max()) if wf.size else 0.0, smallest_normal(w.dtype))
            err = float(np.abs(gf - wf).max()) if wf.size else 0.0
            rel = err / scale
            worst = max(worst, rel)
            if not rel <= limit:
                return f"output {i}: relative max error {rel:.3g} > {limit:g}", worst
            continue
        try:
            np.testing.assert_allclose(gf, wf, rtol=rtol, atol=atol)
        except AssertionError as exc:
            lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
            detail = "; ".join(ln for ln in lines if ln.startswith(("Mismatched", "Max")))
            return f"output {i}: {detail or 'values differ'}", worst
    return "", worst


def relative_error(got: Any, exact: Any) -> float:
    """max|got - exact| / max|exact| over the finite values of `exact` (0 when it has none)."""
    import numpy as np

    ef = np.asarray(exact).astype(np.float64)
    finite = np.isfinite(ef)
    scale = float(np.abs(ef[finite]).max()) if finite.any() else 0.0
    if not scale:
        return 0.0
    return float(np.abs(np.asarray(got).astype(np.float64)[finite] - ef[finite]).max()) / scale


def as_accurate(
    got: list[Any],
    want: list[Any],
    exact: list[Any],
    model_dtype: str,
    nearby: Sequence[tuple[list[Any], list[Any]]] = (),
) -> tuple[str, dict[str, float]]:
    """('' when it holds, else the problem; the errors) for half-precision outputs: each of
    `got` as close to `exact` (the same model computed in float32) as PyTorch's `want` is, to
    within twice PyTorch's error plus HALF_REL_MAX of the output's dtype, or of the model's
    (`model_dtype`) for a float32 output of a half-precision model (logits upcast), relative
    max errors. A model whose half-precision run PyTorch itself computes 5% off exact (cpmant
    in bfloat16) cannot be held to 5 steps of PyTorch's result; a wrong op still lands far
    beyond it.

    PyTorch's error is the largest of its error on these inputs and on each of `nearby`'s
    (PyTorch's half-precision result, the float32 computation) pairs: the same model on inputs
    a rounding step away. One run's error is one draw of its rounding noise: CvT's 4 bfloat16
    logits are 1.6% off on the case's images and 2.4-4.7% on 8 nearby ones."""
    import numpy as np

    errors: dict[str, float] = {}
    if not len(got) == len(want) == len(exact):
        return f"{len(got)} outputs, expected {len(want)}", errors
    for i, (g, w, e) in enumerate(zip(got, want, exact, strict=True)):
        g, w, e = np.asarray(g), np.asarray(w), np.asarray(e)
        floor = HALF_REL_MAX.get(str(w.dtype), HALF_REL_MAX.get(model_dtype))
        if str(g.dtype) != str(w.dtype) or g.shape != w.shape:
            return f"output {i}: {g.dtype} {g.shape}, expected {w.dtype} {w.shape}", errors
        if floor is None or e.shape != w.shape:
            return f"output {i}: no half-precision result to hold to float32's", errors
        finite = np.isfinite(e.astype(np.float64))
        if not finite.any() or not np.abs(e.astype(np.float64)[finite]).max():
            return f"output {i}: the float32 computation has no finite non-zero value", errors
        ours = relative_error(g, e)
        theirs = relative_error(w, e)
        spread = max((relative_error(ws[i], es[i]) for ws, es in nearby), default=0.0)
        for key, value in (
            ("rel_err_vs_float32", ours),
            ("torch_rel_err_vs_float32", theirs),
            ("torch_rel_err_nearby", spread),
        ):
            if key != "torch_rel_err_nearby" or nearby:
                errors[key] = max(errors.get(key, 0.0), value)
        limit = 2 * max(theirs, spread) + floor
        if not ours <= limit:
            return (
                f"output {i}: relative max error {ours:.3g} to the float32 computation, "
                f"PyTorch's {theirs:.3g}"
                + (f" ({spread:.3g} on nearby inputs)" if nearby else "")
                + f" (allowed: {limit:.3g}, twice PyTorch's + {floor:g})"
            ), errors
    return "", errors

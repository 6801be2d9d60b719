"""The ONNX route: an ONNX file (its test data the reference, else ONNX Runtime on seeded
inputs), or a torch model exported to ONNX as a user would, through from_onnx."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .backends import checked, compile_case
from .case import Case, CaseFailed
from .compare import compare, leaves
from .judge import Check
from .timing import interleaved


def ort_session(path: str, threads: int | None) -> Any:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    if threads:
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


def read_pb(path: Path) -> Any:
    import onnx
    from onnx import numpy_helper

    t = onnx.TensorProto()
    t.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(t)


def onnx_inputs(model: Any) -> list[Any]:
    inits = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def random_inputs(model: Any) -> list[Any]:
    """Inputs for an ONNX file with no test data: seeded random values of the declared types;
    a symbolic dimension is 1."""
    import numpy as np
    from onnx import helper

    rng = np.random.default_rng(0)
    out = []
    for vi in onnx_inputs(model):
        tt = vi.type.tensor_type
        dt = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        shape = [d.dim_value if d.HasField("dim_value") else 1 for d in tt.shape.dim]
        if dt.kind == "f":
            out.append(rng.standard_normal(shape).astype(dt))
        elif dt.kind == "b":
            out.append(rng.integers(0, 2, shape).astype(dt))
        else:
            out.append(rng.integers(0, 8, shape).astype(dt))
    return out


def run_onnx(case: Case) -> None:
    """An ONNX file: its test data as the reference, else ONNX Runtime on seeded inputs."""
    import onnx

    spec = case.spec
    model = onnx.load(spec.model)
    data = Path(spec.data) if spec.data else None
    names = [vi.name for vi in onnx_inputs(model)]
    want: list[Any] | None = None
    if data is not None:
        inputs = [read_pb(data / f"input_{i}.pb") for i in range(len(names))]
        n_out = len(list(data.glob("output_*.pb")))
        want = [read_pb(data / f"output_{i}.pb") for i in range(n_out)]
    else:
        inputs = random_inputs(model)
    sess = ort_session(spec.model, case.run.threads) if spec.ort else None
    if sess is not None and want is None:
        want = sess.run(None, dict(zip(names, inputs, strict=True)))
    if want is None:
        raise CaseFailed("no reference: the case has no test data and ONNX Runtime is off")
    check_onnx(case, model, inputs, want, sess)


def run_torch_onnx(case: Case, model: Any, inputs: tuple[Any, ...]) -> None:
    """The torch model exported to ONNX as a user would (torch.onnx.export, dynamo) and
    imported with from_onnx; ONNX Runtime on the same file is the reference (whether ORT
    agrees with PyTorch is noted, not judged: `ort_vs_torch`)."""
    import tempfile

    import onnx
    import torch

    with torch.no_grad():
        torch_out = leaves(model(*inputs))
    case.enter("export")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        with torch.no_grad():
            torch.onnx.export(model, inputs, dynamo=True).save(path)
        onnx_model = onnx.load(path)
        sess = ort_session(path, case.run.threads)
    arrays = [x.detach().numpy() for x in inputs]
    names = [vi.name for vi in onnx_inputs(onnx_model)]
    want = sess.run(None, dict(zip(names, arrays, strict=True)))
    problem, _ = compare(want, torch_out, 0, 0, case.spec.rel_max)
    case.info["ort_vs_torch"] = problem or "agrees"
    check_onnx(case, onnx_model, arrays, want, sess)


def check_onnx(case: Case, model: Any, inputs: list[Any], want: list[Any], sess: Any) -> None:
    """Import, compile and run an ONNX model on `inputs` (in the graph's input order) and
    compare with `want`; with reps, time TVM and ONNX Runtime (`sess`, if any)."""
    from tvm.relax.frontend.onnx import from_onnx

    spec = case.spec
    names = [vi.name for vi in onnx_inputs(model)]
    case.enter("import")
    mod = from_onnx(model, keep_params_in_input=False)
    vm = compile_case(mod, case)
    by_name = dict(zip(names, inputs, strict=True))
    params = [str(getattr(p, "name", None) or p.name_hint) for p in mod["main"].params]
    ordered = [by_name[n] for n in params] if set(params) <= set(by_name) else inputs
    check = Check(args=ordered, want=want, rtol=spec.rtol, atol=spec.atol, rel_max=spec.rel_max)
    args = checked(case, vm, check)
    if spec.reps:
        fns = {"tvm": lambda: vm(*args)}
        if sess is not None:
            feed = dict(zip(names, inputs, strict=True))
            fns["ort"] = lambda: sess.run(None, feed)
        case.times.update(interleaved(fns, spec.reps, spec.budget_s, case.run.threads))

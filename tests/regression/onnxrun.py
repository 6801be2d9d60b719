"""ONNX models of one node in regression tests: built here, imported with `from_onnx`, compiled
for llvm and compared with ONNX's reference implementation output by output."""

from __future__ import annotations

import numpy as np
import onnx
import tvm
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from tvm import relax
from tvm.relax.frontend.onnx import from_onnx


def node_model(
    node: onnx.NodeProto, inputs: dict[str, np.ndarray], outputs: list, opset: int
) -> onnx.ModelProto:
    """A model of `node` alone, its inputs typed and shaped as `inputs`' arrays."""
    graph = helper.make_graph(
        [node],
        node.op_type,
        [
            helper.make_tensor_value_info(
                n, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)
            )
            for n, a in inputs.items()
        ],
        outputs,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def out(name: str, elem: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, None)


def run(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The model's outputs from TVM: from_onnx -> tvm.compile("llvm") -> VM."""
    vm = relax.VirtualMachine(tvm.compile(from_onnx(model), target="llvm"), tvm.cpu())
    result = vm["main"](*[tvm.runtime.tensor(a) for a in inputs.values()])
    if hasattr(result, "numpy"):
        return [result.numpy()]
    return [o.numpy() if hasattr(o, "numpy") else np.array(tuple(o), "int64") for o in result]


def onnxruntime(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The model's outputs from ONNX Runtime (where ONNX's reference implementation fails)."""
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


def check(
    model: onnx.ModelProto,
    inputs: dict[str, np.ndarray],
    want: list[np.ndarray] | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-5,
) -> None:
    """TVM's outputs match `want` (by default ONNX's reference implementation's): count,
    shape, dtype, values."""
    if want is None:
        want = ReferenceEvaluator(model).run(None, inputs)
    got = run(model, inputs)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.shape == w.shape, f"output {i}: shape {g.shape}, expected {w.shape}"
        assert g.dtype == w.dtype, f"output {i}: dtype {g.dtype}, expected {w.dtype}"
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"output {i}")

"""ONNX's node conformance cases, written out from the generators the onnx wheel ships, in
ONNX's own layout (model.onnx, test_data_set_0/input_N.pb, output_N.pb) plus cases.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def gen_onnx_node(out: Path) -> int:
    import numpy as np
    import onnx
    from onnx import numpy_helper
    from onnx.backend.test.case.node import collect_testcases

    out.mkdir(parents=True, exist_ok=True)
    cases = []
    for tc in collect_testcases():
        entry: dict[str, Any] = {"name": tc.name, "rtol": tc.rtol, "atol": tc.atol}
        if tc.model is None or not tc.data_sets:
            entry["skip"] = "no model or no data in the generator"
            cases.append(entry)
            continue
        d = out / tc.name
        data = d / "test_data_set_0"
        data.mkdir(parents=True, exist_ok=True)
        onnx.save(tc.model, str(d / "model.onnx"))
        inputs, outputs = tc.data_sets[0]
        for kind, values in (("input", inputs), ("output", outputs)):
            for i, v in enumerate(values):
                if isinstance(v, onnx.TensorProto):
                    proto = v
                elif isinstance(v, (np.ndarray, np.generic)):
                    proto = numpy_helper.from_array(np.asarray(v))
                else:
                    what = "sequence" if isinstance(v, list) else type(v).__name__
                    if v is None:
                        what = "optional (None)"
                    entry["skip"] = f"{kind} {i} is a {what} value: only tensors are run"
                    break
                (data / f"{kind}_{i}.pb").write_bytes(proto.SerializeToString())
            if "skip" in entry:
                break
        entry["model"] = str(d / "model.onnx")
        entry["data"] = str(data)
        cases.append(entry)
    (out / "cases.json").write_text(json.dumps(cases, indent=1))
    return 0

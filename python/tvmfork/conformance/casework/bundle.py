"""A bundled case on disk: what a case compiled here leaves for a device that has only TVM's
runtime, and what the device's runner reads back.

A case's folder holds `case.so` (the library, `export_library`), `case.json` (its calls:
a `judge.Check` or a `judge.Generation` each, numbers and names), `arrays.npz` (every array
those calls hold) and, for CUDA, `kernels/SHA256.fatbin`: each CUDA module's kernels
compiled and assembled here by nvcc, keyed by the digest of the source TVM stores in the
library. The runner hands the fatbin to TVM in place of compiling the source on the device
(`tvm_callback_cuda_compile`), so the device needs no CUDA compiler.

Arrays keep their dtype: bfloat16 and the other ml_dtypes types are written as unsigned
integers of their width and their dtype's name. Standard library at import.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import fields
from pathlib import Path
from typing import Any

from .judge import Check, Generation

LIBRARY = "case.so"
CALLS = "case.json"
ARRAYS = "arrays.npz"
KERNELS = "kernels"
FORMAT = 1


class Writer:
    """The calls of one case, written into `folder` as they come (`add`), then `close`d."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.calls: list[dict[str, Any]] = []
        self.arrays: dict[str, Any] = {}
        self.dtypes: dict[str, str] = {}

    def _put(self, values: list[Any] | None) -> list[str] | None:
        if values is None:
            return None
        names = []
        for value in values:
            name = f"a{len(self.arrays)}"
            self.arrays[name], self.dtypes[name] = storable(value)
            names.append(name)
        return names

    def add(self, call: Check | Generation) -> None:
        if isinstance(call, Generation):
            self.calls.append(
                {
                    "kind": "generation",
                    "prompt": self._put([call.prompt]),
                    "state": self._put(call.state),
                    "count": call.count,
                    "want": list(call.want),
                }
            )
            return
        call.filled()
        record: dict[str, Any] = {"kind": "check"}
        for f in fields(Check):
            value = getattr(call, f.name)
            if f.name == "fill":
                continue
            if f.name in ("args", "want", "exact"):
                record[f.name] = self._put(value)
            elif f.name == "ties":
                record["ties"] = None if value is None else [self._put([value[0]]), value[1]]
            elif f.name == "nearby":
                record["nearby"] = [[self._put(a), self._put(b)] for a, b in value]
            else:
                record[f.name] = value
        self.calls.append(record)

    def close(self, notes: dict[str, Any]) -> None:
        """Write the calls and their arrays; `notes`: what the case noted here (its target)."""
        import numpy as np

        np.savez(self.folder / ARRAYS, **self.arrays)
        doc = {"format": FORMAT, "calls": self.calls, "dtypes": self.dtypes, "notes": notes}
        (self.folder / CALLS).write_text(json.dumps(doc, indent=1) + "\n")


def storable(value: Any) -> tuple[Any, str]:
    """(an array numpy writes without pickling, the dtype to read it back as)."""
    import numpy as np

    a = np.asarray(value)
    name = str(a.dtype)
    if a.dtype.type.__module__.startswith("ml_dtypes"):
        return a.view(f"u{a.dtype.itemsize}"), name
    return a, name


def read(folder: Path) -> list[Check | Generation]:
    """The calls a case's folder holds, as `Writer` wrote them."""
    import numpy as np

    doc = json.loads((folder / CALLS).read_text())
    if doc.get("format") != FORMAT:
        raise ValueError(
            f"{folder / CALLS}: format {doc.get('format')}, this runner reads {FORMAT}"
        )
    with np.load(folder / ARRAYS, allow_pickle=False) as npz:
        stored = {k: npz[k] for k in npz.files}
    dtypes: dict[str, str] = doc["dtypes"]

    def get(names: list[str] | None) -> list[Any] | None:
        if names is None:
            return None
        return [restored(stored[n], dtypes[n]) for n in names]

    calls: list[Check | Generation] = []
    for c in doc["calls"]:
        if c["kind"] == "generation":
            prompt = get(c["prompt"])
            state = get(c["state"])
            assert prompt is not None and state is not None
            calls.append(Generation(prompt[0], state, int(c["count"]), list(c["want"])))
            continue
        args, want = get(c["args"]), get(c["want"])
        assert args is not None and want is not None
        ties = c.get("ties")
        tie = None
        if ties is not None:
            xs = get(ties[0])
            assert xs is not None
            tie = (xs[0], int(ties[1]))
        nearby = []
        for a, b in c.get("nearby", []):
            pa, pb = get(a), get(b)
            assert pa is not None and pb is not None
            nearby.append((pa, pb))
        calls.append(
            Check(
                args=args,
                want=want,
                rtol=c["rtol"],
                atol=c["atol"],
                rel_max=c["rel_max"],
                per_dtype=c["per_dtype"],
                ties=tie,
                fallback=c["fallback"],
                model_dtype=c["model_dtype"],
                exact=get(c["exact"]),
                nearby=nearby,
                label=c["label"],
            )
        )
    return calls


def restored(a: Any, dtype: str) -> Any:
    import numpy as np

    if str(a.dtype) == dtype:
        return a
    try:
        return a.view(np.dtype(dtype))
    except TypeError:  # an ml_dtypes type numpy knows only once ml_dtypes is imported
        import ml_dtypes

        return a.view(getattr(ml_dtypes, dtype))


def case_folder(side: str, suite: str, name: str) -> str:
    """A case's folder in a bundle, relative to it: cases/SIDE/SLUG-HASH."""
    import re

    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{suite}-{name}")[:80]
    digest = hashlib.sha256(f"{suite}/{name}".encode()).hexdigest()[:8]
    return f"cases/{side}/{slug}-{digest}"


def source_digest(source: str | bytes) -> str:
    """The key of a CUDA module's kernels: the sha256 of the source TVM stores."""
    data = source.encode() if isinstance(source, str) else bytes(source)
    return hashlib.sha256(data).hexdigest()


def folder_size(folder: Path) -> int:
    return sum(
        os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(folder) for f in files
    )

"""What the runner tells a conformance worker: one case's spec, and the worker's environment.

Standard library only: the worker (`worker.py`, run by each side's interpreter from this
folder) imports this module as it is, inside the TVM venvs. The suites (`suites.py`) build
specs with it and the runner sends them as JSON; one set of defaults serves both.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

# The worker's environment. Not `TVMFORK_*`: that prefix is the settings' (settings.py), and
# these are set by the runner for its workers, not by users.
TARGET_VAR = "CONFORMANCE_TARGET"  # the TVM target the worker compiles for
THREADS_VAR = "CONFORMANCE_THREADS"  # threads for PyTorch and ONNX Runtime (TVM: TVM_NUM_THREADS)
EXTRA_PATH_VAR = "CONFORMANCE_EXTRA_PATH"  # a folder of packages (`--with`), after the venv's
RPC_VAR = "CONFORMANCE_RPC"  # HOST:PORT:KEY: run each compiled case on a device of that tracker
CROSS_CC_VAR = "CONFORMANCE_CROSS_CC"  # the C++ compiler that links the library for the device
ASSEMBLE_VAR = (
    "CONFORMANCE_ASSEMBLE"  # sm_80,sm_90: compile only, the CUDA kernels assembled for each
)


@dataclass(frozen=True)
class Spec:
    """One case. `kind` "torch": a module of a suite file (`module`, `name`) or a HuggingFace
    folder (`hf`), through `route` "export" (torch.export, PyTorch the reference) or "onnx"
    (torch.onnx.export, ONNX Runtime the reference). `kind` "onnx": a model file (`model`),
    its inputs and outputs in `data` (a test_data_set folder) or random inputs against ONNX
    Runtime.

    Results compare element-wise within `rtol`/`atol`, and where `rel_max` is non-zero by the
    largest error relative to the largest value (random weights span magnitudes where an
    element-wise rtol fails on near-zero sums). With `reps` > 0 the case is timed for up to
    `budget_s` seconds, ONNX Runtime too where `ort`, and torch.compile (Inductor) where
    `inductor`.
    """

    kind: str
    module: str = ""
    name: str = ""
    route: str = "export"
    hf: str = ""
    model: str = ""
    data: str = ""
    rtol: float = 1e-3
    atol: float = 1e-5
    rel_max: float = 0.0
    reps: int = 0
    budget_s: float = 0.0
    ort: bool = False
    inductor: bool = False

    def __post_init__(self) -> None:
        if self.kind not in ("torch", "onnx"):
            raise ValueError(f"case kind {self.kind!r}: torch or onnx")
        if self.route not in ("export", "onnx"):
            raise ValueError(f"case route {self.route!r}: export or onnx")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Spec:
        unknown = set(data) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"unknown case spec key(s): {sorted(unknown)}")
        return cls(**data)


@dataclass(frozen=True)
class Remote:
    """Where cases run when not on this machine: a device that the RPC tracker `tracker`
    (HOST:PORT) hands out for `key`; the library is linked here by `cross_cc` (a C++
    compiler for the device's triple; empty: the default one)."""

    tracker: str
    key: str
    cross_cc: str = ""

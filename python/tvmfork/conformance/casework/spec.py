"""What the runner tells a conformance worker: the run's configuration and one case's spec,
sent together as one JSON line (`Message`), so that nothing of a run reaches the worker
through its environment.

Standard library only: the worker (`worker.py`, run by each side's interpreter) imports this
package as it is, inside the TVM venvs. The suites (`suites.py`) build specs with it and the
runner sends them; one set of defaults serves both.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass(frozen=True)
class Spec:
    """One case. `kind` "torch": a module of a suite file (`module`, `name`) or a HuggingFace
    folder (`hf`), through `route` "export" (torch.export, PyTorch the reference) or "onnx"
    (torch.onnx.export, ONNX Runtime the reference). `kind` "onnx": a model file (`model`),
    its inputs and outputs in `data` (a test_data_set folder) or random inputs against ONNX
    Runtime. `kind` "opinfo": one sample of an op of PyTorch's op_db (`name` the op's
    `NAME[.VARIANT]`, `data` the sample's file, `casework.opinfo`).

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
        if self.kind not in ("torch", "onnx", "opinfo"):
            raise ValueError(f"case kind {self.kind!r}: torch, onnx or opinfo")
        if self.route not in ("export", "onnx"):
            raise ValueError(f"case route {self.route!r}: export or onnx")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Spec:
        return cls(**_known(cls, data, "case spec"))


def _known(cls: type, data: dict[str, Any], what: str) -> dict[str, Any]:
    unknown = set(data) - {f.name for f in fields(cls)}
    if unknown:
        raise ValueError(f"unknown {what} key(s): {sorted(unknown)}")
    return data


@dataclass(frozen=True)
class Remote:
    """Where cases run when not on this machine: a device that the RPC tracker `tracker`
    (HOST:PORT) hands out for `key`; the library is linked here by `cross_cc` (a C++
    compiler for the device's triple; empty: the default one)."""

    tracker: str
    key: str
    cross_cc: str = ""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Remote:
        return cls(**_known(cls, data, "remote device"))


@dataclass(frozen=True)
class RunConfig:
    """What every case of a run shares, as the worker takes it.

    `target`: "host" (the ISA of the machine the worker runs on, resolved there), a target
    string, or a JSON object as tvm.target.Target takes them. `threads`: PyTorch's and ONNX
    Runtime's thread count (TVM's pool reads TVM_NUM_THREADS, TVM's own variable, which the
    runner sets from this at the worker's start: `worker_env`); None leaves each its default.
    `extra_path`: a folder of packages (`--with`) after the venv's own. `remote`: run each
    compiled case on a device of an RPC tracker. `assemble`: compile-only (CUDA without a
    GPU), each kernel assembled by nvcc for these architectures. `bundle`: this case's folder
    of a bundle (`casework.bundle`): compiled, written there with its inputs and references
    (CUDA kernels assembled for `assemble`), and run later on a device that has only TVM's
    runtime; the runner sends the bundle's folder, and each case's message names the case's own
    folder in it (`bundle.case_folder`).
    """

    target: str = "llvm"
    threads: int | None = None
    extra_path: str = ""
    remote: Remote | None = None
    assemble: tuple[str, ...] = ()
    bundle: str = ""

    def worker_env(self) -> dict[str, str]:
        """The variables of the worker's process that its libraries read before any case:
        TVM's thread pool size. Nothing of tvmfork's own."""
        return {"TVM_NUM_THREADS": str(self.threads)} if self.threads else {}

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunConfig:
        known = dict(_known(cls, data, "run configuration"))
        if known.get("remote") is not None:
            known["remote"] = Remote.from_json(known["remote"])
        known["assemble"] = tuple(known.get("assemble", ()))
        return cls(**known)


@dataclass(frozen=True)
class Message:
    """One line the runner sends a worker: the run's configuration and the case."""

    run: RunConfig
    case: Spec

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run.to_json(), "case": self.case.to_json()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Message:
        _known(cls, data, "worker message")
        return cls(RunConfig.from_json(data["run"]), Spec.from_json(data["case"]))

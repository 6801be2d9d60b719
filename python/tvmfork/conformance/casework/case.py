"""A case in progress on the worker: the stage it is in (announced on the protocol, so that a
crash or a hang is charged to it), its times and notes, and the errors that end it."""

from __future__ import annotations

import json
import sys
from typing import IO, Any

from .spec import RunConfig, Spec

# The protocol's stream: the worker points it at the real stdout and everything else at stderr.
CHANNEL: list[IO[str]] = [sys.stdout]


def send(obj: dict[str, Any]) -> None:
    out = CHANNEL[0]
    out.write(json.dumps(obj) + "\n")
    out.flush()


class CaseFailed(Exception):
    """The case stopped at its current stage with this message (not a harness error)."""


class NotRun(Exception):  # not an error: the case cannot be a case, with the reason
    """The case cannot be run as a case of its suite (PyTorch's own torch.export refuses the
    sample's program): listed as not run with the reason, on both sides alike."""


class CompileOnly(Exception):  # not an error: the end of a compile-only case
    """The case compiled and assembled on a compile-only target: it ends there, ok."""


class Case:
    """One case: its spec, the run it belongs to, the stage reached, times and notes."""

    def __init__(self, spec: Spec, run: RunConfig) -> None:
        self.spec = spec
        self.run = run
        self.stage = "load"
        self.times: dict[str, float] = {}
        self.info: dict[str, Any] = {}
        self.written: Any = None  # a bundled case's `bundle.Writer`, closed when the case ends

    def enter(self, stage: str) -> None:
        self.stage = stage
        send({"stage": stage})


def last_line(exc: BaseException) -> str:
    """The error's most telling line: TVM errors end with the check that failed."""
    text = str(exc).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if lines and lines[0] == "Compilation error:":  # a compiler's: its first message, not argv
        problem = next((ln for ln in lines[1:] if "error" in ln or "ld:" in ln), lines[-1])
        return f"{type(exc).__name__}: {problem}"[:400]
    for ln in reversed(lines):
        if "Check failed" in ln or ln.startswith(("InternalError", "TVMError", "ValueError")):
            return f"{type(exc).__name__}: {ln}"[:400]
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}"[:400]


def export_reason(exc: BaseException) -> str:
    """torch.export's reason for refusing a program: its message's first line and first
    detail ("Constraints violated (seq)! ... - Not all values of seq ... satisfy the generated
    guard 7 <= ..."), not the hint it ends with."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    detail = next((ln for ln in lines[1:] if ln.startswith("- ")), "")
    head = lines[0] if lines else ""
    return f"{type(exc).__name__}: {head} {detail}".strip()[:400]

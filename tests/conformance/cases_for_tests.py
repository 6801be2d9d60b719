"""A torch-module suite for the conformance lane's own tests: a case that passes, one that
crashes its worker, one that hangs, and one that fails at export. The worker imports this
file by path inside each side's venv."""

from __future__ import annotations

import os
import signal
import time

import torch


class Small(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x)) * 2.0


class DataDependent(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:  # Python control flow on a value: torch.export refuses it
            return x + 1
        return x - 1


def small() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    return Small(), (torch.randn(2, 8),)


def crash() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    os.kill(os.getpid(), signal.SIGSEGV)
    raise AssertionError("unreachable")


def hang() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    time.sleep(3600)
    raise AssertionError("unreachable")


def not_exportable() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    return DataDependent(), (torch.randn(3),)


# Order matters to the test: the crash and the hang come before a case that must still pass.
CASES = {
    "a_crash": crash,
    "b_hang": hang,
    "c_small": small,
    "d_not_exportable": not_exportable,
}

"""A torch-module suite for the RPC lane's tests: a small case, and one that runs for seconds
on the device (so a test can kill the device while it runs). The worker imports this file by
path inside each side's venv."""

from __future__ import annotations

import torch


class Small(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x)) * 2.0


class Slow(torch.nn.Module):
    """Sixteen 1536-square matmuls in a chain: about 116 GFLOP, seconds on any CPU."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(1536, 1536) / 1536**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(16):
            x = torch.tanh(x @ self.w)
        return x


def small() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    return Small(), (torch.randn(2, 8),)


def slow() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    return Slow(), (torch.randn(1536, 1536),)


CASES = {"a_small": small, "b_slow": slow, "c_small": small}

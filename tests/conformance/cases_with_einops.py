"""A user's torch-module suite that needs a package the test venvs do not have (einops):
`tvmfork conformance --torch-module THIS --with einops` runs it on both sides."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import einops
import torch


class Patches(torch.nn.Module):
    """Image to patch tokens with einops, then a linear layer (a ViT stem)."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(3 * 4 * 4, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = einops.rearrange(x, "b c (h p) (w q) -> b (h w) (c p q)", p=4, q=4)
        out: torch.Tensor = self.proj(tokens)
        return out


CASES: dict[str, Callable[[], Any]] = {"patches": lambda: (Patches(), (torch.randn(1, 3, 8, 8),))}

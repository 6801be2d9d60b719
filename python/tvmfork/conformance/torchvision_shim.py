"""torchvision importable beside a CPU torch, for the suites and for a user's own modules.

PyPI's torchvision is built against the CUDA torch: its C++ ops do not load beside the CPU
torch, and `import torchvision` then fails registering fake kernels for `torchvision::nms`
("operator torchvision::nms does not exist"). transformers imports torchvision when it is
installed, so without this every transformers model fails at import too. Declaring the two
ops' schemas first lets it import; the models need none of its C++ ops (detection
post-processing calls `nms`, which gets the plain PyTorch kernel below).

Imported by path-free name: the worker runs from this folder, so it is on `sys.path`.
"""

from __future__ import annotations

import sys
from typing import Any

import torch

_SHIM: list[Any] = []


def load() -> Any:
    """torchvision, imported (with the shim where its C++ ops do not load); None where it
    is not installed."""
    if not _SHIM:
        try:
            import torchvision  # works where its C++ ops load
        except ImportError:
            return None
        except RuntimeError:
            lib = torch.library.Library("torchvision", "DEF")
            lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
            lib.define("qnms(Tensor qdets, Tensor scores, float iou_threshold) -> Tensor")
            lib.impl("nms", _nms, "CPU")  # detection post-processing runs in eager
            _SHIM.append(lib)
            for name in [m for m in sys.modules if m.startswith("torchvision")]:
                del sys.modules[name]
        _SHIM.append(True)
    import torchvision

    if len(_SHIM) > 1:  # the shim's nms stands in for the C++ one: let torchvision.ops call it
        torchvision.extension._has_ops = lambda: True
    return torchvision


def _nms(dets: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """Greedy non-maximum suppression in plain PyTorch (what torchvision's C++ op computes):
    the indices of the kept boxes, by decreasing score."""
    order = scores.argsort(descending=True)
    keep = []
    x1, y1, x2, y2 = dets.unbind(1)
    area = (x2 - x1).clamp(min=0) * (y2 - y1).clamp(min=0)
    suppressed = torch.zeros(len(order), dtype=torch.bool)
    for pos, i in enumerate(order.tolist()):
        if suppressed[pos]:
            continue
        keep.append(i)
        rest = order[pos + 1 :]
        w = (torch.minimum(x2[i], x2[rest]) - torch.maximum(x1[i], x1[rest])).clamp(min=0)
        h = (torch.minimum(y2[i], y2[rest]) - torch.maximum(y1[i], y1[rest])).clamp(min=0)
        inter = w * h
        iou = inter / (area[i] + area[rest] - inter)
        suppressed[pos + 1 :] |= iou > iou_threshold
    return torch.tensor(keep, dtype=torch.int64)

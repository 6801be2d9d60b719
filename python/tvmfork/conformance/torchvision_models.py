"""The `torchvision` conformance suite: a torch-module suite like a user's own.

A suite module defines `CASES`, a dict from case name to a function that returns
`(model, example_inputs)`; the worker imports it by path inside the venv under test, so it
uses only that venv's packages. Weights are random (`weights=None`, seeded by the worker):
the suite checks that TVM computes what PyTorch computes, not accuracy.

One model per classification family (the smallest), the segmentation and video models, and
two detection models (their post-processing calls torchvision's C++ ops, which the PyPI
torchvision cannot load beside the CPU torch: the shim below gives `nms` a plain PyTorch
kernel, and a model that needs another of them, roi_align, stops at load on both sides).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch

_SHIM: list[Any] = []


def _torchvision() -> Any:
    """torchvision, importable beside a CPU torch: PyPI's torchvision is built against the CUDA
    torch, its C++ ops do not load, and its import then fails registering fake kernels for
    `torchvision::nms`. Declaring the two ops' schemas first lets it import; the models need
    none of its C++ ops (detection post-processing does, and fails when called)."""
    if not _SHIM:
        try:
            import torchvision  # works where its C++ ops load
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


# name -> input shape; 160x160 images where the model allows (ViT, MaxViT and the
# Swin V2 window need 224), 8 frames of 112x112 for video.
IMAGE = (1, 3, 160, 160)
IMAGE_224 = (1, 3, 224, 224)
VIDEO = (1, 3, 8, 112, 112)
CLASSIFICATION = {
    "alexnet": IMAGE_224,
    "convnext_tiny": IMAGE,
    "densenet121": IMAGE,
    "efficientnet_b0": IMAGE,
    "efficientnet_v2_s": IMAGE,
    "googlenet": IMAGE,
    "inception_v3": (1, 3, 299, 299),
    "maxvit_t": IMAGE_224,
    "mnasnet0_5": IMAGE,
    "mobilenet_v2": IMAGE,
    "mobilenet_v3_small": IMAGE,
    "regnet_x_400mf": IMAGE,
    "regnet_y_400mf": IMAGE,
    "resnet18": IMAGE,
    "resnext50_32x4d": IMAGE,
    "shufflenet_v2_x0_5": IMAGE,
    "squeezenet1_1": IMAGE,
    "swin_t": IMAGE,
    "swin_v2_t": IMAGE_224,
    "vgg11": IMAGE,
    "vit_b_32": IMAGE_224,
    "wide_resnet50_2": IMAGE,
}
SEGMENTATION = {
    "deeplabv3_mobilenet_v3_large": IMAGE,
    "lraspp_mobilenet_v3_large": IMAGE,
    "fcn_resnet50": IMAGE,
}
# S3D ends in a (2, 7, 7) average pool: it needs 16 frames of 224x224
VIDEO_MODELS = {"r3d_18": VIDEO, "mc3_18": VIDEO, "r2plus1d_18": VIDEO, "s3d": (1, 3, 16, 224, 224)}
DETECTION = {
    "ssdlite320_mobilenet_v3_large": (1, 3, 320, 320),
    "fasterrcnn_mobilenet_v3_large_320_fpn": (1, 3, 320, 320),
}


def _factory(module: str, name: str, shape: tuple[int, ...]) -> Callable[[], Any]:
    def make() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
        tv = _torchvision()
        ns = tv.models if not module else getattr(tv.models, module)
        kwargs: dict[str, Any] = {"weights": None}
        if module == "detection":
            kwargs["weights_backbone"] = None
        if name in ("googlenet", "inception_v3"):
            kwargs["aux_logits"] = False
            kwargs["init_weights"] = True
        if module == "segmentation":
            kwargs["weights_backbone"] = None
            kwargs["aux_loss"] = False
        model = getattr(ns, name)(**kwargs)
        x = torch.randn(*shape)
        return model, ([x[0]],) if module == "detection" else (x,)

    return make


CASES: dict[str, Callable[[], Any]] = {}
for _module, _table in (
    ("", CLASSIFICATION),
    ("segmentation", SEGMENTATION),
    ("video", VIDEO_MODELS),
    ("detection", DETECTION),
):
    for _name, _shape in _table.items():
        CASES[_name] = _factory(_module, _name, _shape)

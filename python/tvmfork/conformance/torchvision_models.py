"""The `torchvision` conformance suite: a torch-module suite like a user's own.

A suite module defines `CASES`, a dict from case name to a function that returns
`(model, example_inputs)`; the worker imports it by path inside the venv under test, so it
uses only that venv's packages. Weights are random (`weights=None`, seeded by the worker):
the suite checks that TVM computes what PyTorch computes, not accuracy.

One model per classification family (the smallest), the segmentation and video models, and
two detection models (their post-processing calls torchvision's C++ ops, which the PyPI
torchvision cannot load beside the CPU torch: the shim below gives `nms` a plain PyTorch
kernel (`torchvision_shim.py`), and a model that needs another of them, roi_align, stops at
load on both sides).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torchvision_shim  # beside this file, on the path of the worker that imports it

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
        tv = torchvision_shim.load()
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

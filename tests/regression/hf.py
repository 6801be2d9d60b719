"""transformers in regression tests: imported after the conformance lane's torchvision shim
(transformers imports torchvision, whose PyPI wheel does not load beside the CPU torch)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

SHIM = Path(__file__).resolve().parents[2] / "python/tvmfork/conformance/torchvision_shim.py"


def transformers() -> Any:
    spec = importlib.util.spec_from_file_location("torchvision_shim", SHIM)
    assert spec is not None and spec.loader is not None
    shim = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shim)
    shim.load()
    import transformers as hf

    return hf

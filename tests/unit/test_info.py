"""`tvmfork info` reads an environment's TVM without importing it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tvmfork import info

from .conftest import write

pytestmark = pytest.mark.unit


def _fake_env(root: Path, tvm: str, ffi: str, manifest: dict[str, object] | None) -> Path:
    write(root / "tvm/__init__.py", "raise SystemExit('info must not import tvm')\n")
    write(root / f"apache_tvm-{tvm}.dist-info/METADATA", f"Name: apache-tvm\nVersion: {tvm}\n")
    write(
        root / f"apache_tvm_ffi-{ffi}.dist-info/METADATA", f"Name: apache-tvm-ffi\nVersion: {ffi}\n"
    )
    if manifest is not None:
        write(root / "tvm/fork_manifest.json", json.dumps(manifest))
    return root


MANIFEST = {
    "mode": "overlay",
    "variant": "stock-binary",
    "tvm_ffi_requirement": ">=0.1.13.post2,<0.1.15",
    "upstream": {"tag": "v0.26.0", "commit": "c7b458e9"},
    "patches": [
        {"name": "a.patch", "native": False, "included": True, "sha256": "ab" * 32},
        {"name": "b.patch", "native": True, "included": False, "sha256": "cd" * 32},
    ],
}


def test_fork_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "PYTHONPATH", str(_fake_env(tmp_path, "0.26.0+fork.x", "0.1.15.post2", MANIFEST))
    )
    data = info.gather(sys.executable)
    assert data["tvm"] == "0.26.0+fork.x" and data["tvm_ffi_in_range"] is False
    text = info.render(data)
    assert "OUT OF RANGE: >=0.1.13.post2,<0.1.15" in text
    assert "LEFT OUT native" in text and "included python" in text


def test_stock_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(_fake_env(tmp_path, "0.26.0", "0.1.14.post1", None)))
    assert "stock TVM (no fork manifest)" in info.render(info.gather(sys.executable))

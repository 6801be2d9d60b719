"""Conformance suites as data: how a user's ONNX folder becomes cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from tvmfork.conformance import suites
from tvmfork.errors import UsageError

pytestmark = pytest.mark.unit


def test_onnx_folder_cases_and_their_comparison(tmp_path: Path) -> None:
    """With ONNX's test data beside a model, its rtol/atol compare; without, ONNX Runtime on
    random inputs is the reference and the relative max error compares (a random-weight model's
    outputs span magnitudes where an element-wise rtol fails on near-zero sums)."""
    (tmp_path / "plain.onnx").write_bytes(b"")
    (tmp_path / "withdata" / "test_data_set_0").mkdir(parents=True)
    (tmp_path / "withdata" / "model.onnx").write_bytes(b"")
    cases = {c.name: c for c in suites.onnx_dir(tmp_path, suites.Limits(), [])}
    assert sorted(cases) == ["plain", "withdata"]
    assert cases["plain"].spec["data"] == "" and cases["plain"].spec["rel_max"] == 1e-3
    assert cases["withdata"].spec["data"].endswith("test_data_set_0")
    assert cases["withdata"].spec["rel_max"] == 0.0
    assert all(c.suite == f"onnx:{tmp_path.name}" for c in cases.values())
    with pytest.raises(UsageError, match=r"no NAME\.onnx"):
        suites.onnx_dir(tmp_path / "withdata" / "test_data_set_0", suites.Limits(), [])

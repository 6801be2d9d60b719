"""The CUDA lane, compile-only (`tvmfork conformance --target cuda`): each case compiled for
CUDA by each side's TVM and every kernel assembled by nvcc (ptxas) for each architecture
asked; no GPU is needed. Where nvcc is missing the tests skip, saying so.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .lane import conformance

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.conformance,
    pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) not installed"),
]


# Node cases that compiled for CUDA on stock and not on the fork until fixed: a float8 cast
# and one to e8m0 (refused at import), training Dropout's run-time check (did not fuse),
# float16 Mod (no 16-bit fmod in CUDA C), Expand by a run-time shape (a Select in a buffer
# shape) and RoiAlign's max mode (refused at import).
ONCE_REGRESSED = [
    "test_cast_FLOAT_to_FLOAT8E4M3FNUZ",
    "test_cast_e8m0_FLOAT_to_FLOAT8E8M0",
    "test_training_dropout_mask",
    "test_mod_float16_mixed_sign_fmod_0",
    "test_expand_dim_changed",
    "test_roialign_mode_max",
]


def test_cases_compile_for_cuda_with_no_regression(tmp_path: Path) -> None:
    """ConvTranspose's node cases (test_convtranspose_output_shape failed to compile for CUDA
    on the fork until matmul-rule-declines-an-epilogue-it-cannot-inline), the cases of
    ONCE_REGRESSED, and a CNN."""
    globs = ",".join(["test_convtranspose*", "squeezenet1_1", *ONCE_REGRESSED])
    args = ["onnx-node", "torchvision", "-k", globs, "--target", "cuda", "--jobs", "2"]
    r = conformance(*args, "--cuda-archs", "sm_80,sm_90", "--report", str(tmp_path))
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [json.loads(ln) for ln in (tmp_path / "results.jsonl").read_text().splitlines()]
    fork = {row["case"]: row for row in rows if row["side"] == "fork"}
    assert len(fork) >= 16 and {"squeezenet1_1", *ONCE_REGRESSED} <= set(fork), sorted(fork)
    for row in fork.values():
        assert row["status"] == "ok", row
        assert row["kernels_assembled_for"] == "sm_80,sm_90", row
        assert "first_run_ms" not in row, row  # compiled, never run
    assert "compile-only" in (tmp_path / "report.md").read_text() or "compile-only" in r.stdout
    assert "0 regressions" in r.stdout


def test_bad_architectures_are_a_usage_error(tmp_path: Path) -> None:
    r = conformance("ci", "--target", "cuda", "--cuda-archs", "sm80", "--report", str(tmp_path))
    assert r.returncode == 2 and "--cuda-archs sm80: give CUDA architectures" in r.stderr

"""src_cc/: the native patches' C++ tests, built against the patched checkout's headers and
the build tree's libraries, run by ctest."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tvmfork import toolchain
from tvmfork.patchflow import series_applied

from .conftest import REPO, Native, cmake_program


def _run(cmd: list[str], cwd: Path | None = None) -> str:
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    out = r.stdout + r.stderr
    assert r.returncode == 0, f"{' '.join(cmd)} failed ({r.returncode}):\n{out[-4000:]}"
    return out


def test_src_cc_with_ctest(native: Native, tmp_path: Path) -> None:
    tests = sorted((REPO / "src_cc").glob("test_*.cc"))
    if not tests:
        pytest.skip("src_cc/ has no test_*.cc yet")
    if toolchain.gtest() is None:
        pytest.skip("native lane: GoogleTest not found (Debian: apt install libgtest-dev)")
    if not (native.build_dir / "lib" / "libtvm_compiler.so").is_file():
        pytest.skip(f"native lane: no build tree at {native.build_dir} (make wheel MODE=source)")
    assert series_applied(native.checkout, native.series), (
        f"{native.checkout} does not carry the series in patches/: run `tvmfork apply`"
    )
    cmake = cmake_program(native)
    build = native.settings.out_dir / "native-tests"
    ninja = Path(cmake).with_name("ninja")
    _run([
        cmake, "-S", str(REPO), "-B", str(build), "-G", "Ninja",
        f"-DTVM_SOURCE_DIR={native.checkout}", f"-DTVM_BUILD_DIR={native.build_dir}",
        *([f"-DCMAKE_MAKE_PROGRAM={ninja}"] if ninja.exists() else []),
    ])  # fmt: skip
    _run([cmake, "--build", str(build)])
    ctest = str(Path(cmake).with_name("ctest"))
    out = _run([ctest, "--test-dir", str(build), "--output-on-failure", "--no-tests=error"])
    # ctest: "100% tests passed, 0 tests failed out of N" (CMake < 4: "... out of N")
    assert re.search(rf"100% tests passed.* out of {len(tests)}\b", out), out

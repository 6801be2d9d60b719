"""Fixtures: a tiny fake upstream (real git repos in tmp dirs) and a tvmfork repo for it."""

from __future__ import annotations

import hashlib
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tvmfork import cli


def git(cwd: Path, *args: str) -> str:
    r = subprocess.run(
        ["git", "-c", "protocol.file.allow=always", *args],
        cwd=cwd,
        check=True,
        text=True,
        capture_output=True,
        env={
            "GIT_AUTHOR_NAME": "dev",
            "GIT_AUTHOR_EMAIL": "dev@example.com",
            "GIT_COMMITTER_NAME": "dev",
            "GIT_COMMITTER_EMAIL": "dev@example.com",
            "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+0000",
            "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+0000",
            "HOME": str(cwd),
            "PATH": "/usr/bin:/bin:/usr/local/bin",
        },
    )
    return r.stdout.strip()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


PY_FILE = "python/tvm/relax/legalize.py"
PY_TEXT = "".join(f"def op{i}(x):\n    return x + {i}\n\n\n" for i in range(12))


# The fake upstream builds like TVM: scikit-build-core from pyproject.toml, version from
# setuptools-scm, CMake installs its libraries into tvm/lib, the variant passes defines.
FAKE_PYPROJECT = """\
[build-system]
requires = ["scikit-build-core>=0.11", "setuptools-scm>=8"]
build-backend = "scikit_build_core.build"

[project]
name = "apache-tvm"
dynamic = ["version"]
requires-python = ">=3.10"
dependencies = ["apache-tvm-ffi>=0.1.0"]

[tool.scikit-build]
cmake.build-type = "Release"
wheel.py-api = "py3"
wheel.packages = ["python/tvm"]
wheel.install-dir = "tvm"
metadata.version.provider = "scikit_build_core.metadata.setuptools_scm"

[tool.setuptools_scm]
fallback_version = "0.0.dev0"
"""

FAKE_CMAKELISTS = """\
cmake_minimum_required(VERSION 3.26)
project(faketvm LANGUAGES CXX)
if(NOT FAKE_FLAVOR STREQUAL "cpu")
  message(FATAL_ERROR "FAKE_FLAVOR must come from the variant, got '${FAKE_FLAVOR}'")
endif()
foreach(i RANGE 1 6)
  configure_file(src/op.cc ${CMAKE_BINARY_DIR}/op${i}.cc COPYONLY)
  list(APPEND SRCS ${CMAKE_BINARY_DIR}/op${i}.cc)
endforeach()
add_library(tvm_runtime SHARED src/op.cc)
add_library(extra OBJECT ${SRCS})
install(TARGETS tvm_runtime DESTINATION lib)
"""


@dataclass
class Upstream:
    repo: Path
    ffi: Path
    commit: str
    tree: str
    ffi_commit: str


@pytest.fixture
def upstream(tmp_path: Path) -> Upstream:
    """A fake TVM with python/, src/, tests/ and one submodule (3rdparty/tvm-ffi)."""
    ffi = tmp_path / "up-ffi"
    write(ffi / "include/ffi.h", "int ffi(void);\n")
    git(ffi, "init", "-q", "-b", "main", ".")
    git(ffi, "add", "-A")
    git(ffi, "commit", "-qm", "ffi")
    repo = tmp_path / "up-tvm"
    write(repo / PY_FILE, PY_TEXT)
    write(repo / "python/tvm/__init__.py", "")
    write(repo / "src/op.cc", "int op() { return 1; }\n")
    write(repo / "tests/python/test_op.py", "def test_op():\n    pass\n")
    write(repo / "pyproject.toml", FAKE_PYPROJECT)
    write(repo / "CMakeLists.txt", FAKE_CMAKELISTS)
    git(repo, "init", "-q", "-b", "main", ".")
    git(repo, "submodule", "add", "-q", str(ffi), "3rdparty/tvm-ffi")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "upstream")
    git(repo, "tag", "v1.0.0")
    return Upstream(
        repo,
        ffi,
        git(repo, "rev-parse", "HEAD"),
        git(repo, "rev-parse", "HEAD^{tree}"),
        git(ffi, "rev-parse", "HEAD"),
    )


def make_stock_wheel(
    dir: Path, body: str = PY_TEXT, platform: str = "any", crlf: bool = False
) -> Path:
    """A small wheel shaped like apache-tvm's: tvm/ files plus a dist-info; `crlf`: its Python
    files end lines with CRLF, as upstream's Windows wheel's do."""
    dir.mkdir(parents=True, exist_ok=True)
    path = dir / f"apache_tvm-1.0.0-py3-none-{platform}.whl"
    info = "apache_tvm-1.0.0.dist-info"
    files = {
        "tvm/__init__.py": "",
        "tvm/_version.py": "__version__ = version = '1.0.0'\n",
        "tvm/relax/legalize.py": body,
        "tvm/lib/libtvm.so": "\x7fELF" + "x" * 5000,
        f"{info}/METADATA": "Metadata-Version: 2.4\nName: apache-tvm\nVersion: 1.0.0\n"
        "Requires-Dist: apache-tvm-ffi>=0.1.0\nRequires-Dist: numpy\n",
        f"{info}/WHEEL": f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: py3-none-{platform}\n",
    }
    if crlf:
        files = {n: t.replace("\n", "\r\n") if n.endswith(".py") else t for n, t in files.items()}
    record = "".join(f"{n},sha256=x,{len(t)}\n" for n, t in files.items()) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, text in files.items():
            zf.writestr(zipfile.ZipInfo(name, (2026, 1, 1, 0, 0, 0)), text)
        zf.writestr(zipfile.ZipInfo(f"{info}/RECORD", (2026, 1, 1, 0, 0, 0)), record)
    return path


@dataclass
class Fork:
    root: Path
    checkout: Path
    wheel: Path
    upstream: Upstream

    def run(self, *args: str) -> int:
        return cli.main(["--repo", str(self.root), *args])

    def tvm(self, *args: str) -> str:
        return git(self.checkout, *args)

    def commit_change(
        self,
        path: str,
        old: str,
        new: str,
        subject: str,
        test: str = "",
        fixes: str = "patches/README.md#example; apache/tvm#1",
        extra: str = "",
    ) -> None:
        f = self.checkout / path
        text = f.read_text() if f.exists() else ""
        write(f, text.replace(old, new) if old else text + new)
        trailers = (
            f"Fixes: {fixes}\n{extra}Upstream-Status: pending\n"
            f"Regression-Test: {test or 'tests/regression/test_example.py'}"
        )
        self.tvm("add", "-A")
        self.tvm("commit", "-qm", f"{subject}\n\nWhy this change.\n\n{trailers}")


@pytest.fixture
def fork(tmp_path: Path, upstream: Upstream, monkeypatch: pytest.MonkeyPatch) -> Fork:
    """A tvmfork repo pinned to `upstream`, with a checkout made by `tvmfork checkout`."""
    for name in list(__import__("os").environ):
        if name.startswith("TVMFORK_"):
            monkeypatch.delenv(name)
    root = tmp_path / "fork"
    wheel = make_stock_wheel(tmp_path / "wheels")
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    write(root / "patches/series", "# order\n")
    write(
        root / "patches/lock.toml",
        f'''
[upstream]
url = "{upstream.repo}"
tag = "v1.0.0"
commit = "{upstream.commit}"
tree = "{upstream.tree}"
version = "1.0.0"

[[submodule]]
path = "3rdparty/tvm-ffi"
url = "{upstream.ffi}"
commit = "{upstream.ffi_commit}"
required = true

[stock_wheel]
project = "apache-tvm"

[[stock_wheel.file]]
filename = "{wheel.name}"
sha256 = "{sha}"

[tvm_ffi]
built_with = "0.1.0"
compatible = ["0.1.0", "0.1.5"]
incompatible = ["0.2.0.post1"]
''',
    )
    write(root / "tests/regression/test_example.py", "def test_x():\n    pass\n")
    write(root / "patches/README.md", "# Patches\n\n## example\n\nWhat it fixes.\n")
    checkout = tmp_path / "checkout"
    write(
        root / "tvmfork.local.toml",
        f'checkout_dir = "{checkout}"\ncache_dir = "{tmp_path / "cache"}"\n'
        f'[wheel]\nstock_wheel = "{wheel}"\n',
    )
    f = Fork(root, checkout, wheel, upstream)
    assert f.run("checkout", "--source", str(upstream.repo)) == 0
    git(checkout, "config", "user.name", "dev")
    git(checkout, "config", "user.email", "dev@example.com")
    return f

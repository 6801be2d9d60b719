"""The build toolchain: find each tool, read its version, and refuse clearly before compiling.

Every check names what it found (path and version) and what is needed, so a missing or old
tool is one readable line, not a CMake error an hour into a build.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tvmfork import proc
from tvmfork.errors import ToolchainError

MIN_CMAKE = (3, 26)
MIN_LLVM = 15
NEWEST_LLVM = 30
DEFAULT_NVCC = Path("/usr/local/cuda/bin/nvcc")


@dataclass(frozen=True)
class Tool:
    path: Path
    version: str

    def describe(self) -> str:
        return f"{self.path} ({self.version})"


def _version_tuple(text: str) -> tuple[int, ...]:
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if not m:
        return ()
    return tuple(int(g) for g in m.groups() if g is not None)


def _output(cmd: list[str | Path]) -> str:
    r = proc.run(cmd, check=False)
    return r.stdout.strip() if r.returncode == 0 else ""


def cmake(path: Path) -> Tool:
    text = _output([path, "--version"]) if path.exists() else ""
    found = _version_tuple(text)
    need = ".".join(map(str, MIN_CMAKE))
    if not found:
        raise ToolchainError(f"cmake not usable at {path}; TVM needs CMake >= {need}")
    if found < MIN_CMAKE:
        raise ToolchainError(
            f"cmake at {path} is {'.'.join(map(str, found))}; TVM needs CMake >= {need}"
        )
    return Tool(path, ".".join(map(str, found)))


def llvm_candidates() -> list[Path]:
    """llvm-config on PATH, versioned ones (llvm-config-19) and Debian's /usr/lib/llvm-N."""
    seen: list[Path] = []
    names = ["llvm-config"] + [f"llvm-config-{v}" for v in range(NEWEST_LLVM, 9, -1)]
    for name in names:
        hit = shutil.which(name)
        if hit:
            seen.append(Path(hit))
    for v in range(NEWEST_LLVM, 9, -1):
        cand = Path(f"/usr/lib/llvm-{v}/bin/llvm-config")
        if cand.is_file():
            seen.append(cand)
    unique: dict[Path, Path] = {}
    for p in seen:
        unique.setdefault(p.resolve(), p)
    return list(unique.values())


def llvm_config(explicit: str | None) -> Tool:
    """The newest llvm-config >= MIN_LLVM (or the one given), with its version."""
    cands = [Path(explicit)] if explicit else llvm_candidates()
    found: list[Tool] = []
    for c in cands:
        ver = _output([c, "--version"]) if c.exists() else ""
        if ver:
            found.append(Tool(c, ver))
    good = [t for t in found if _version_tuple(t.version)[:1] >= (MIN_LLVM,)]
    if not good:
        seen = ", ".join(t.describe() for t in found) or "no llvm-config at all"
        raise ToolchainError(
            f"TVM needs LLVM >= {MIN_LLVM} (an llvm-config); found: {seen}. Install one "
            "(Debian: apt install llvm-19-dev libpolly-19-dev) or set build.llvm_config"
        )
    return max(good, key=lambda t: _version_tuple(t.version))


# Libraries LLVM's static link may name (llvm-config --system-libs) -> the Debian package with
# the file the linker needs.
DEBIAN_DEV = {
    "z": "zlib1g-dev",
    "zstd": "libzstd-dev",
    "xml2": "libxml2-dev",
    "ffi": "libffi-dev",
    "edit": "libedit-dev",
    "tinfo": "libncurses-dev",
    "ncurses": "libncurses-dev",
}


def llvm_static_libs(llvm: Tool) -> list[str]:
    """The system libraries (`-lNAME` -> NAME) a static link of LLVM needs."""
    text = _output([llvm.path, "--system-libs", "--link-static"])
    return [w[2:] for w in text.split() if w.startswith("-l")]


def llvm_missing_archives(llvm: Tool) -> list[str]:
    """LLVM's own static archives that `llvm-config --libfiles` names but the disk lacks
    (Debian's llvm-N-dev names libPolly.a, shipped in libpolly-N-dev)."""
    text = _output([llvm.path, "--link-static", "--libfiles"])
    return [f for f in text.split() if f.endswith(".a") and not Path(f).exists()]


def check_llvm_archives(llvm: Tool) -> None:
    missing = llvm_missing_archives(llvm)
    if missing:
        major = llvm.version.split(".")[0]
        hint = (
            f" (Debian: apt install libpolly-{major}-dev)"
            if any("Polly" in Path(m).name for m in missing)
            else ""
        )
        raise ToolchainError(
            f"linking LLVM {llvm.version} statically needs {', '.join(missing)}, which "
            f"`llvm-config --libfiles` names and the disk lacks{hint}"
        )


def linker_finds(lib: str) -> bool:
    """Whether the C++ compiler's linker finds libNAME (shared or static)."""
    cxx = compiler().path
    for suffix in (".so", ".a"):
        found = _output([cxx, f"-print-file-name=lib{lib}{suffix}"])
        if found and Path(found).is_absolute() and Path(found).exists():
            return True
    return False


def check_libraries(libs: list[str], why: str) -> None:
    """Stop before configuring when the linker lacks a library the build will link."""
    missing = [lib for lib in libs if not linker_finds(lib)]
    if missing:
        pkgs = sorted({DEBIAN_DEV.get(lib, f"lib{lib}-dev") for lib in missing})
        raise ToolchainError(
            f"{why} needs {', '.join('lib' + m for m in missing)}, which the linker does not "
            f"find. Install them (Debian: apt install {' '.join(pkgs)})"
        )


def gtest() -> str | None:
    """Where GoogleTest's CMake package or library is, or None (the native lane's C++ tests
    need it: Debian libgtest-dev)."""
    for cand in (
        Path("/usr/lib/x86_64-linux-gnu/cmake/GTest"),
        Path("/usr/lib/aarch64-linux-gnu/cmake/GTest"),
        Path("/usr/lib/cmake/GTest"),
        Path("/usr/local/lib/cmake/GTest"),
    ):
        if cand.is_dir():
            return str(cand)
    return "libgtest" if linker_finds("gtest") else None


def nvcc(cuda_home: str | None) -> Tool:
    cands = []
    if cuda_home:
        cands.append(Path(cuda_home) / "bin" / "nvcc")
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            cands.append(Path(os.environ[env]) / "bin" / "nvcc")
    hit = shutil.which("nvcc")
    if hit:
        cands.append(Path(hit))
    cands.append(DEFAULT_NVCC)
    for c in cands:
        text = _output([c, "--version"]) if c.exists() else ""
        m = re.search(r"release (\d+\.\d+)", text)
        if m:
            return Tool(c, m.group(1))
    where = ", ".join(str(c) for c in cands)
    raise ToolchainError(
        f"the cuda variant needs nvcc (the CUDA toolkit); none found (looked at {where}). "
        "Install the toolkit or set build.cuda_home"
    )


def cuda_home_of(nvcc_tool: Tool) -> Path:
    """The toolkit root: nvcc's real location, two levels up (nvcc may be a wrapper)."""
    script = nvcc_tool.path.read_bytes()[:200]
    m = re.search(rb"(/\S+)/bin/nvcc", script) if script.startswith(b"#!") else None
    if m:
        return Path(m.group(1).decode())
    return nvcc_tool.path.resolve().parent.parent


def compiler() -> Tool:
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or "c++"
    text = _output([cxx, "--version"])
    if not text:
        raise ToolchainError(f"no C++ compiler ({cxx}); install g++ or clang, or set CXX")
    return Tool(Path(cxx), text.splitlines()[0])


def ccache() -> Path | None:
    hit = shutil.which("ccache")
    return Path(hit) if hit else None


def _nm_symbols(args: list[str | Path]) -> tuple[set[str], set[str]]:
    """(defined, undefined) global symbols of an object, archive or shared library."""
    r = subprocess.run(
        ["nm", *map(str, args)], capture_output=True, text=True, errors="replace", check=False
    )
    defined: set[str] = set()
    undefined: set[str] = set()
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[-2] == "U":
            undefined.add(parts[-1].split("@")[0])
        elif len(parts) == 3 and parts[1] not in ("U", "w", "v"):
            defined.add(parts[2].split("@")[0])
    return defined, undefined


def _is_cxx_runtime(sym: str) -> bool:
    return sym.startswith(("__cxa_", "_ZNSt", "_ZNKSt", "_ZSt", "_ZTISt", "_ZTVSt"))


def missing_cxx_runtime(archive: Path) -> list[str]:
    """C++ runtime symbols that a static library needs and this compiler's libstdc++ lacks
    (mlc-z3-static is built with GCC 14; GCC 12's libstdc++ cannot link it)."""
    cxx = compiler().path
    libs = [_output([cxx, f"-print-file-name={n}"]) for n in ("libstdc++.so.6", "libc.so.6")]
    if not libs[0] or not Path(libs[0]).exists():
        return []
    defined, undefined = _nm_symbols([archive])
    needed = {s for s in undefined - defined if _is_cxx_runtime(s)}
    have: set[str] = set()
    for lib in libs:
        if lib and Path(lib).exists():
            have |= _nm_symbols(["-D", "--defined-only", Path(lib).resolve()])[0]
    return sorted(needed - have)

"""Source mode: variants, toolchain checks, the build lock, progress, linkage, the driver stub,
and one real build of the fake upstream through scikit-build-core, CMake and Ninja."""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from tvmfork import cudastub, linkage, proc, toolchain, ui, variants
from tvmfork import lock as lockmod
from tvmfork.errors import ProcessError, ToolchainError, UsageError
from tvmfork.wheel import source

from .conftest import Fork, write

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]


def _script(path: Path, output: str) -> Path:
    write(path, f"#!/bin/sh\necho '{output}'\n").chmod(0o755)
    return path


# -- variants ----------------------------------------------------------------------------
def test_repo_variants_load_and_name_only_known_placeholders() -> None:
    cpu = variants.load(REPO / "build", "cpu")
    cuda = variants.load(REPO / "build", "cuda")
    assert cpu.sidecar is None and cpu.cmake["USE_CUDA"] == "OFF"
    assert "libcudart." in cpu.linkage["forbidden"]
    assert cuda.sidecar is not None and "tvm_runtime_cuda" in cuda.sidecar.targets
    assert cuda.cmake["TVM_PACKAGE_EXTRA_LIBS"] == "{sidecar}"
    known = {"llvm_config", "cuda_home", "nvcc", "cuda_architectures", "cuda_driver_lib"}
    assert cpu.placeholders() <= known
    assert cuda.placeholders() <= known | {"sidecar", "cuda_major"}


def test_variant_errors_name_the_file_and_the_key(tmp_path: Path) -> None:
    write(tmp_path / "cpu.toml", '[cmake]\nUSE_LLVM = "ON"\n[cmaek]\nX = 1\n')
    with pytest.raises(UsageError, match=r"cpu\.toml: unknown key\(s\) cmaek"):
        variants.load(tmp_path, "cpu")
    with pytest.raises(UsageError, match=r"no build variant 'rocm'.*variants: \['cpu'\]"):
        variants.load(tmp_path, "rocm")


# -- toolchain -----------------------------------------------------------------------------
def test_llvm_too_old_names_what_was_found_and_what_is_needed(tmp_path: Path) -> None:
    old = _script(tmp_path / "llvm-config-14", "14.0.6")
    with pytest.raises(ToolchainError, match=r"LLVM >= 15.*llvm-config-14 \(14\.0\.6\)"):
        toolchain.llvm_config(str(old))
    good = _script(tmp_path / "llvm-config", "19.1.7")
    assert toolchain.llvm_config(str(good)).version == "19.1.7"


def test_no_llvm_at_all(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(toolchain, "llvm_candidates", lambda: [])
    with pytest.raises(ToolchainError, match="found: no llvm-config at all"):
        toolchain.llvm_config(None)


def test_libraries_of_llvms_static_link_are_checked_up_front(tmp_path: Path) -> None:
    """LLVM's static link names system libraries (zstd, xml2, z): a missing one stopped CMake
    with "Could NOT find zstd"; the preflight names the Debian packages instead."""
    llvm = toolchain.Tool(_script(tmp_path / "llvm-config", "-lrt -ldl -lm -lz -lzstd"), "19")
    assert toolchain.llvm_static_libs(llvm) == ["rt", "dl", "m", "z", "zstd"]
    toolchain.check_libraries(["m", "c"], "linking LLVM")  # every system has these
    with pytest.raises(ToolchainError) as err:
        toolchain.check_libraries(["m", "xml2_tvmfork_missing", "zstd_tvmfork_missing"], "x")
    assert "libxml2_tvmfork_missing, libzstd_tvmfork_missing" in str(err.value)
    assert "apt install libxml2_tvmfork_missing-dev libzstd_tvmfork_missing-dev" in str(err.value)
    assert toolchain.DEBIAN_DEV["zstd"] == "libzstd-dev"


def test_llvms_own_archives_are_checked_up_front(tmp_path: Path) -> None:
    """Debian's llvm-19-dev names libPolly.a in `--libfiles` but ships it in libpolly-19-dev:
    without it ninja stopped at the last link, `libPolly.a ... missing and no known rule`."""
    here = tmp_path / "libLLVMCore.a"
    here.write_text("")
    gone = tmp_path / "libPolly.a"
    llvm = toolchain.Tool(_script(tmp_path / "llvm-config", f"{here} {gone}"), "19.1.7")
    assert toolchain.llvm_missing_archives(llvm) == [str(gone)]
    with pytest.raises(ToolchainError, match=r"libPolly\.a.*apt install libpolly-19-dev"):
        toolchain.check_llvm_archives(llvm)
    gone.write_text("")
    toolchain.check_llvm_archives(llvm)


def test_cmake_too_old(tmp_path: Path) -> None:
    cmake = _script(tmp_path / "cmake", "cmake version 3.25.1")
    with pytest.raises(ToolchainError, match=r"is 3\.25\.1; TVM needs CMake >= 3\.26"):
        toolchain.cmake(cmake)
    assert toolchain.cmake(_script(tmp_path / "c2", "cmake version 4.1.0")).version == "4.1.0"


def _archive(tmp_path: Path, body: str) -> Path:
    src = write(tmp_path / "a.cc", body)
    obj = tmp_path / "a.o"
    subprocess.run(["c++", "-c", "-fPIC", src, "-o", obj], check=True)
    lib = tmp_path / "liba.a"
    subprocess.run(["ar", "rcs", lib, obj], check=True)
    return lib


def test_missing_cxx_runtime_symbols_are_found(tmp_path: Path) -> None:
    """A static library built by a newer GCC needs libstdc++ symbols this one lacks."""
    needs_future = "namespace std { void tvmfork_future_symbol(); }\n"
    needs_future += "void f() { std::tvmfork_future_symbol(); }\n"
    lib = _archive(tmp_path, needs_future)
    assert toolchain.missing_cxx_runtime(lib) == ["_ZSt21tvmfork_future_symbolv"]
    (tmp_path / "a.o").unlink()
    plain = _archive(
        tmp_path, "#include <string>\nstd::string g() { return std::string(40, 'x'); }\n"
    )
    assert toolchain.missing_cxx_runtime(plain) == []


def test_cuda_variant_without_nvcc_stops_before_compiling(
    fork: Fork, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    shutil.copytree(REPO / "build", fork.root / "build")
    llvm = _script(tmp_path / "bin" / "llvm-config", "19.1.7")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(toolchain, "DEFAULT_NVCC", tmp_path / "nowhere" / "nvcc")
    code = fork.run("wheel", "--mode", "source", "--variant", "cuda", "--llvm-config", str(llvm))
    assert code == ToolchainError.exit_code
    assert not (fork.checkout / "build").exists()


# -- build lock, progress, streaming -------------------------------------------------------
def test_a_second_build_in_the_same_folder_is_refused(tmp_path: Path) -> None:
    with source.build_lock(tmp_path / "b"):
        with pytest.raises(UsageError, match=r"another build is using .*\(pid \d+ since"):
            with source.build_lock(tmp_path / "b"):
                pass
    with source.build_lock(tmp_path / "b"):  # released: usable again
        pass


def test_changed_build_settings_reset_the_cmake_cache(tmp_path: Path) -> None:
    tree = tmp_path / "b"
    tree.mkdir()
    defines = {"USE_LLVM": "llvm-config", "ZLIB_USE_STATIC_LIBS": "ON"}
    assert source.changed_defines(tree, defines) == []  # never configured: nothing to reset
    write(tree / "CMakeCache.txt", "ZLIB_LIBRARY_RELEASE:FILEPATH=/usr/lib/libz.so\n")
    assert source.changed_defines(tree, defines) == ["(no record of the last configure)"]
    source.record_defines(tree, defines)
    assert source.changed_defines(tree, defines) == []
    changed = {**defines, "ZLIB_USE_STATIC_LIBS": "OFF", "USE_CUDA": "ON"}
    assert source.changed_defines(tree, changed) == ["USE_CUDA", "ZLIB_USE_STATIC_LIBS"]
    assert source.changed_defines(tree, {"USE_LLVM": "llvm-config"}) == ["ZLIB_USE_STATIC_LIBS"]


def test_progress_reports_steps_and_an_estimate(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = iter([0.0, 0.0, 10.0, 20.0, 30.0])
    monkeypatch.setattr(ui.time, "monotonic", lambda: next(clock))
    p = ui.Progress("build", every=5)
    p.line("-- Configuring done")
    p.line("[1/10] Building CXX object a.o")
    p.line("[3/10] Building CXX object b.o")
    p.line("[10/10] Linking CXX shared library lib.so")
    err = capsys.readouterr().err
    assert (
        f"build: [3/10] 30%, 0:10 elapsed, about 0:35 left ({ui.ROUGH})  Building CXX object b.o"
        in err
    )
    assert "[10/10] 100%" in err


def test_progress_leaves_a_pause_out(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two steps 10 s apart, then an hour with no step (the build was stopped): the hour is
    not build time, so neither the elapsed time nor the estimate grows by it."""
    hour = 3600.0
    clock = iter([0.0, 0.0, 10.0, 10.0 + hour, 20.0 + hour])
    monkeypatch.setattr(ui.time, "monotonic", lambda: next(clock))
    p = ui.Progress("build", every=0)
    for n in (1, 2, 3, 4):
        p.line(f"[{n}/10] Building CXX object {n}.o")
    err = capsys.readouterr().err.splitlines()
    paused = ui.PAUSE
    active = 10.0 + paused + 10.0
    assert f"paused {ui._clock(hour - paused)} not counted" in err[-1]
    assert f"[4/10] 40%, {ui._clock(active)} elapsed" in err[-1]
    # 3 steps in `active` seconds since the first: 6 to go
    assert f"about {ui._clock(6 * active / 3)} left" in err[-1]


def test_estimate_from_the_last_builds_step_times(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cheap steps first, costly later: the rate says 0:20 left after the first step; the
    step times of the last build (.ninja_log) know the rest costs 99x the first."""
    log = write(
        tmp_path / ".ninja_log",
        "# ninja log v6\n0\t1000\t0\ta.o\t1\n0\t9000\t0\tb.o\t2\n0\t90000\t0\tlib.so\t3\n",
    )
    costs = ui.ninja_costs(log)
    assert costs == {"a.o": 1.0, "b.o": 9.0, "lib.so": 90.0}
    clock = iter([0.0, 10.0, 10.0])
    monkeypatch.setattr(ui.time, "monotonic", lambda: next(clock))
    p = ui.Progress("build", every=0, costs=costs)
    p.line("[1/3] Building CXX object a.o")
    err = capsys.readouterr().err
    # this build is 10x slower than the last (10 s for a 1 s step): 99 s of steps left -> 990 s
    assert "[1/3] 33%, 0:10 elapsed, about 16:30 left (from the last build's step times)" in err


def test_stream_failure_gives_the_tail_and_the_log(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "build.log"
    seen: list[str] = []
    cmd = ["sh", "-c", "echo '[1/2] ok'; echo 'error: boom' >&2; exit 3"]
    with pytest.raises(ProcessError) as err:
        proc.stream(cmd, log, seen.append)
    assert "exit code 3" in str(err.value) and "error: boom" in str(err.value)
    assert f"full log: {log}" in str(err.value)
    assert "[1/2] ok" in seen and "error: boom" in log.read_text()


# -- linkage and the driver stub -----------------------------------------------------------
def test_linkage_rules() -> None:
    rules = {
        "sidecar_required": ["libcuda.so.1", "libcudart.so.13"],
        "sidecar_allowed": ["libtvm_runtime.so", "libc.so.6"],
        "others_forbidden": ["libcuda."],
    }
    good = linkage.Library(
        "tvm/lib/libtvm_runtime_cuda.so",
        ["libcuda.so.1", "libcudart.so.13", "libc.so.6"],
        "$ORIGIN",
    )
    runtime = linkage.Library("tvm/lib/libtvm_runtime.so", ["libc.so.6"], "$ORIGIN")
    assert linkage.problems([good, runtime], rules, "lib/libtvm_runtime_cuda.so") == []
    lost = linkage.Library(good.name, ["libcudart.so.13", "libnccl.so.2"], "")
    bad = linkage.problems([lost, runtime], rules, "lib/libtvm_runtime_cuda.so")
    assert any("does not need libcuda.so.1" in b for b in bad)  # apache/tvm#19754
    assert any("unexpected library: libnccl.so.2" in b for b in bad)
    assert any("no $ORIGIN runpath" in b for b in bad)
    cpu = {"forbidden": ["libcudart."]}
    leaky = linkage.Library("tvm/lib/libtvm_compiler.so", ["libcudart.so.13"], "")
    assert linkage.problems([leaky], cpu, None) == [
        "tvm/lib/libtvm_compiler.so needs libcudart.so.13, which this variant must not need"
    ]
    assert linkage.problems([runtime], rules, "lib/libtvm_runtime_cuda.so") == [
        "the wheel has no lib/libtvm_runtime_cuda.so"
    ]


def test_readelf_of_a_real_library(tmp_path: Path) -> None:
    src = write(tmp_path / "m.c", "#include <math.h>\ndouble f(double x) { return cos(x); }\n")
    lib = tmp_path / "libm_user.so"
    subprocess.run(
        ["cc", "-shared", "-fPIC", src, "-o", lib, "-lm", "-Wl,-rpath,$ORIGIN"], check=True
    )
    got = linkage.read(lib)
    assert "libm.so.6" in got.needed and got.runpath == "$ORIGIN"


def test_driver_stub_from_cuda_h(tmp_path: Path) -> None:
    decls = "".join(f"CUresult CUDAAPI cuThing{i}(int x);\n" for i in range(60))
    write(
        tmp_path / "cuda" / "include" / "cuda.h", f"#define CUDAAPI\ntypedef int CUresult;\n{decls}"
    )
    lib = cudastub.generate(tmp_path / "cuda", tmp_path / "stub")
    out = subprocess.run(
        ["readelf", "-d", "--dyn-syms", lib], capture_output=True, text=True
    ).stdout
    assert "Library soname: [libcuda.so.1]" in out
    assert out.count("cuThing") == 60
    write(tmp_path / "few" / "include" / "cuda.h", "typedef int CUresult;\nCUresult cuA(void);\n")
    with pytest.raises(ToolchainError, match="only 1 driver entry points"):
        cudastub.generate(tmp_path / "few", tmp_path / "stub2")


# -- one real source build -------------------------------------------------------------------
def zf_text(wheel: Path, suffix: str) -> str:
    with zipfile.ZipFile(wheel) as zf:
        return zf.read(next(n for n in zf.namelist() if n.endswith(suffix))).decode()


def test_retag_names_and_wheel_metadata() -> None:
    from tvmfork.wheel import platform

    name = "apache_tvm-0.26.0+fork.abc.cpu-cp311-cp311-linux_x86_64.whl"
    assert platform.retagged_name(name, "manylinux_2_36_x86_64") == (
        "apache_tvm-0.26.0+fork.abc.cpu-cp311-cp311-manylinux_2_36_x86_64.whl"
    )
    text = "Wheel-Version: 1.0\nTag: cp311-cp311-linux_x86_64\nTag: py3-none-linux_x86_64\n"
    assert platform.retag_wheel_file(text, "manylinux_2_36_x86_64") == (
        "Wheel-Version: 1.0\nTag: cp311-cp311-manylinux_2_36_x86_64\n"
        "Tag: py3-none-manylinux_2_36_x86_64\n"
    )
    assert platform.Audit("manylinux_2_36_x86_64", ()).glibc == "2.36"


def test_source_build_of_the_fake_upstream(
    fork: Fork, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """apply -> scikit-build-core/CMake/Ninja -> manifest + bounded tvm-ffi -> linkage -> import;
    then again: the unchanged series is not re-applied and nothing recompiles. `auto` checks
    the toolchain once: the build takes what its preflight found."""
    checks: list[source.Preflight] = []
    real = source.preflight

    def counted(*args: object) -> source.Preflight:
        checks.append(real(*args))  # type: ignore[arg-type]
        return checks[-1]

    monkeypatch.setattr(source, "preflight", counted)
    fork.commit_change("src/op.cc", "return 1", "return 42", "[Op] Native fix")
    assert fork.run("export") == 0
    write(
        fork.root / "build/cpu.toml",
        '[cmake]\nFAKE_FLAVOR = "cpu"\n[linkage]\nforbidden = ["libcuda."]\n',
    )
    assert fork.run("wheel", "--out", str(fork.root / "out")) == 0  # auto: native -> source
    assert len(checks) == 1 and "compiler" in checks[0].tools
    out = capsys.readouterr()
    assert "auto: the series has 1 native patch(es): building from source" in out.err
    assert "build the wheel (scikit-build-core, CMake + Ninja): [" in out.err
    wheels = list((fork.root / "out").glob("apache_tvm-1.0.0+fork.*.cpu-*.whl"))
    assert len(wheels) == 1, out
    with zipfile.ZipFile(wheels[0]) as zf:
        names = zf.namelist()
        man = json.loads(zf.read("tvm/fork_manifest.json"))
        meta = zf.read(next(n for n in names if n.endswith("METADATA"))).decode()
        record = zf.read(next(n for n in names if n.endswith("RECORD"))).decode()
    assert "tvm/lib/libtvm_runtime.so" in names
    assert man["mode"] == "source" and man["variant"] == "cpu"
    assert [p["included"] for p in man["patches"]] == [True]
    assert man["build"]["cmake_defines"]["FAKE_FLAVOR"] == "cpu"
    assert {"compiler", "cmake", "ninja"} <= set(man["toolchain"])
    bound = lockmod.load(fork.root / "patches" / "lock.toml").tvm_ffi_requirement
    assert bound == ">=0.1.0,<0.2.0"
    assert f"Requires-Dist: apache-tvm-ffi{bound}\n" in meta
    assert "tvm/fork_manifest.json,sha256=" in record
    # tagged with the manylinux policy auditwheel found, as the manifest records it
    plat = man["platform"]["tag"]
    assert plat.startswith("manylinux_2_") and wheels[0].name.endswith(f"-{plat}.whl")
    assert man["platform"]["glibc"] == ".".join(plat.split("_")[1:3])
    wheel_meta = zf_text(wheels[0], "WHEEL")
    assert f"-{plat}\n" in wheel_meta and "linux_x86_64\n" not in wheel_meta.replace(plat, "")
    assert f"needs glibc >= {man['platform']['glibc']}" in out.err
    # the step times of this build are kept for the next one's estimate
    profiles = json.loads((fork.root.parent / "cache" / "build-profiles.json").read_text())
    assert any(k.startswith("cpu:") and v for k, v in profiles.items()), profiles
    logs = list((fork.root / "out" / "logs").glob("build-cpu-*.log"))
    assert logs and "Building CXX object" in logs[0].read_text()
    assert f"full log: {logs[0]}" in out.err

    obj = fork.checkout / "build" / "tvmfork-cpu" / "CMakeFiles"
    stamps = {p: p.stat().st_mtime_ns for p in obj.rglob("*.o")}
    src_stamp = (fork.checkout / "src/op.cc").stat().st_mtime_ns
    assert stamps
    assert fork.run("wheel", "--mode", "source", "--out", str(fork.root / "out")) == 0
    assert (fork.checkout / "src/op.cc").stat().st_mtime_ns == src_stamp
    assert {p: p.stat().st_mtime_ns for p in obj.rglob("*.o")} == stamps

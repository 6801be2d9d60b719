"""Bundles for a device that has only TVM's runtime: `tvmfork conformance SUITE --bundle DIR`
compiles each case here with each side's TVM and writes it into DIR (`casework.bundle`: the
library, its inputs, the references computed here); `python DIR/run.py` on the device runs
them (`bundle_runner`); `tvmfork conformance --from-bundle OUT` reads what it wrote back into
the usual stock-vs-fork report.

DIR holds, beside the cases: `run.py` and `casework/` (the runner and the judging code),
`runtime/SIDE.zip` (each side's TVM package from its wheel without the compiler library,
headers or sources: the runtime libraries and the Python that imports them),
`wheels/` (apache-tvm-ffi, ml_dtypes and typing_extensions for the device's Python,
downloaded here), `manifest.json` (the sides, the target, the cases and their folders) and
`build.jsonl` (each case's result here: `bundled`, or where it stopped). Each case's folder
is zipped (`cases/SIDE/NAME.zip`: libraries shrink 2-3 times). It never grows past its
limit: a case (both sides together) that would carry it past is left out, and said so.
"""

from __future__ import annotations

import json
import re
import shutil
import time
import zipfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tvmfork import proc, stock, ui
from tvmfork.conformance import report
from tvmfork.conformance.casework import bundle as casefile
from tvmfork.conformance.runner import CaseSpec, Result
from tvmfork.errors import UsageError

MIB = 1024 * 1024
DEFAULT_LIMIT_MIB = 64
DEFAULT_PYTHON = "3.12"  # the GPU machines this project is lent run Python 3.12
PLATFORM = "manylinux_2_28_x86_64"
FORMAT = 1
RUNNER = Path(__file__).with_name("bundle_runner.py")
CASEWORK = Path(__file__).with_name("casework")
# What the device's TVM leaves out of the wheel's package: the compiler and what only it uses
LEFT_OUT = ("tvm/lib/libtvm_compiler.so", "tvm/3rdparty/", "tvm/src/", "tvm/include/", "tvm/web/")
# What the device's Python imports beside TVM, as the sides' venvs have them
DEVICE_PACKAGES = ("apache-tvm-ffi", "ml_dtypes", "typing_extensions")


@dataclass(frozen=True)
class Plan:
    """Where a bundle goes (`folder`), the most it may hold (`limit`, bytes) and the device's
    Python (`python`, e.g. 3.12)."""

    folder: Path
    limit: int
    python: str

    def check(self) -> None:
        """A usage error for a folder that holds anything (nothing is overwritten) or a limit
        or Python version that cannot be."""
        if self.folder.exists() and (not self.folder.is_dir() or any(self.folder.iterdir())):
            raise UsageError(
                f"--bundle {self.folder}: exists and is not empty; give a new folder (nothing "
                "in it is overwritten)"
            )
        if self.limit < MIB:
            raise UsageError(f"--bundle-limit {self.limit // MIB} MiB: give 1 or more")
        if not re.fullmatch(r"3\.\d+", self.python):
            raise UsageError(f"--device-python {self.python}: give a version such as 3.12")


def runtime_zip(wheel: Path, dest: Path) -> int:
    """The `tvm` package of `wheel` without LEFT_OUT, zipped into `dest`; its size."""
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            name = info.filename
            if not name.startswith("tvm/") or name.endswith("/"):
                continue
            if name in LEFT_OUT or name.startswith(tuple(p for p in LEFT_OUT if p.endswith("/"))):
                continue
            if "__pycache__" in name:
                continue
            out.writestr(name, src.read(name))
    return dest.stat().st_size


def installed_versions(python: Path) -> dict[str, str]:
    """The versions of DEVICE_PACKAGES in the venv of `python`."""
    code = (
        "import json, importlib.metadata as m; "
        f"print(json.dumps({{p: m.version(p) for p in {list(DEVICE_PACKAGES)!r}}}))"
    )
    out = proc.run([python, "-c", code]).stdout.strip().splitlines()[-1]
    versions: dict[str, str] = json.loads(out)
    return versions


def device_wheels(pythons: dict[str, Path], version: str, cache: Path, dest: Path) -> list[str]:
    """The wheels of DEVICE_PACKAGES for the device's Python, at the versions the sides' venvs
    hold (both sides must agree: one set of wheels serves both), into `dest`."""
    found = {side: installed_versions(py) for side, py in pythons.items()}
    first = next(iter(found.values()))
    for side, versions in found.items():
        if versions != first:
            raise UsageError(
                f"the sides' venvs hold different packages a bundle carries ({side}: "
                f"{versions}; {first}): one set of wheels cannot serve both"
            )
    dest.mkdir(parents=True, exist_ok=True)
    names = []
    for package, pinned in first.items():
        with ui.step(f"{package}=={pinned} for Python {version} ({PLATFORM})"):
            wheel = stock.download(f"{package}=={pinned}", cache, python=version, platform=PLATFORM)
        shutil.copyfile(wheel, dest / wheel.name)
        names.append(wheel.name)
    return names


def prepare(plan: Plan, sides: dict[str, Path], wheels: dict[str, Path], cache: Path) -> list[str]:
    """The bundle's folder begun with what every case needs: each side's runtime-only TVM,
    the wheels it imports (their names returned), the runner; a usage error (and nothing
    left behind) when that alone passes the limit."""
    folder = plan.folder
    folder.mkdir(parents=True, exist_ok=True)
    with ui.step("the runtime-only TVM of each side, and the wheels it imports"):
        (folder / "runtime").mkdir(exist_ok=True)
        for side in sides:
            runtime_zip(wheels[side], folder / "runtime" / f"{side}.zip")
        carried = device_wheels(sides, plan.python, cache, folder / "wheels")
    shutil.copyfile(RUNNER, folder / "run.py")
    shutil.copytree(CASEWORK, folder / "casework", ignore=shutil.ignore_patterns("__pycache__"))
    size = casefile.folder_size(folder)
    if size > plan.limit:
        shutil.rmtree(folder)
        raise UsageError(
            f"--bundle-limit {plan.limit // MIB}: the runtime and the runner alone take "
            f"{size / MIB:.1f} MiB; give a larger limit"
        )
    return carried


def zip_case(where: Path) -> int:
    """A case's folder zipped into WHERE.zip (compressed: its libraries shrink 2-3 times) and
    removed; the zip's size."""
    dest = where.parent / f"{where.name}.zip"
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(where.rglob("*")):
            if f.is_file():
                z.write(f, f.relative_to(where).as_posix())
    shutil.rmtree(where)
    return dest.stat().st_size


@dataclass
class Packed:
    """What `pack` wrote: the results as the build ends them (left-out cases `not run`), the
    bundle's size, and the lines to print."""

    results: list[Result]
    size: int
    lines: list[str]


def pack(
    plan: Plan,
    cases: list[CaseSpec],
    results: list[Result],
    sides: list[str],
    carried: list[str],
    header: report.Header,
    device: str,
) -> Packed:
    """The bundle completed around the cases `prepare` began it for: the cases in order while
    the limit allows (both sides of a case, or neither), the manifest and the build's
    results."""
    folder = plan.folder
    # what the cases do not take: the runtime, the runner, and room for the manifest and
    # the build's results (written last)
    size = casefile.folder_size(folder) - casefile.folder_size(folder / "cases")
    size += len(json.dumps(header.to_json())) + 4096
    size += sum(len(json.dumps(r.to_json())) + 200 for r in results)
    by_case: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        by_case.setdefault((r.suite, r.case), []).append(r)
    listed: list[dict[str, Any]] = []
    left_out: list[str] = []
    out_results: list[Result] = []
    for case in cases:
        rs = by_case.get((case.suite, case.name), [])
        bundled = {
            r.side: casefile.case_folder(r.side, r.suite, r.case)
            for r in rs
            if r.status == "bundled"
        }
        zipped = {side: zip_case(folder / f) for side, f in bundled.items()}
        entry = {
            "suite": case.suite,
            "case": case.name,
            "timeout": case.timeout,
            "folders": {side: f"{f}.zip" for side, f in bundled.items()},
        }
        need = sum(zipped.values()) + len(json.dumps(entry, indent=1)) + 16
        if bundled and size + need > plan.limit:
            for f in bundled.values():
                (folder / f"{f}.zip").unlink()
            why = (
                f"left out of the bundle: {need / MIB:.1f} MiB more would pass its limit of "
                f"{plan.limit / MIB:.0f} MiB"
            )
            rs = [
                replace(r, status="not run", stage="", error=why) if r.side in bundled else r
                for r in rs
            ]
            left_out.append(f"{case.suite}/{case.name} ({need / MIB:.1f} MiB)")
        elif bundled:
            size += need
            listed.append(entry)
        out_results += rs
    # the folders of cases that did not finish here (an error after bundle began)
    for side_dir in (folder / "cases").glob("*"):
        for done in side_dir.iterdir():
            if done.is_dir():
                shutil.rmtree(done, ignore_errors=True)
    manifest = {
        "format": FORMAT,
        "python": plan.python,
        "device": device,
        "sides": list(sides),
        "header": header.to_json(),
        "wheels": carried,
        "limit_bytes": plan.limit,
        "cases": listed,
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    with (folder / "build.jsonl").open("w") as fh:
        for r in out_results:
            fh.write(json.dumps(r.to_json()) + "\n")
    size = casefile.folder_size(folder)
    assert size <= plan.limit, f"{size} bytes: over the limit {plan.limit}"
    lines = [
        f"bundle: {folder}: {size / MIB:.1f} MiB (limit {plan.limit / MIB:.0f} MiB), "
        f"{len(listed)} case(s) on {' and '.join(sides)} for a {device} device with Python "
        f"{plan.python}"
    ]
    if left_out:
        lines.append(f"LEFT OUT (over the limit): {len(left_out)}: {', '.join(left_out)}")
    lines.append(
        f"on the device: python{plan.python} {folder.name}/run.py --out OUT (needs numpy); "
        f"then here: tvmfork conformance --from-bundle OUT"
    )
    return Packed(out_results, size, lines)


def read_back(folder: Path) -> tuple[report.Header, list[Result]]:
    """A device's run of a bundle (`run.py --out folder`, or the bundle folder itself after a
    run into it) as a report's header and results: each case bundled here takes the device's
    result, and a case that stopped here keeps the result it had."""
    results_file = folder / "results.jsonl"
    if not results_file.is_file() and (folder / "device" / "results.jsonl").is_file():
        folder = folder / "device"
        results_file = folder / "results.jsonl"
    for need in ("manifest.json", "build.jsonl", "results.jsonl"):
        if not (folder / need).is_file():
            raise UsageError(
                f"--from-bundle {folder}: no {need}; give the folder the bundle's run.py wrote "
                "(its --out, or the bundle's device/)"
            )
    manifest = json.loads((folder / "manifest.json").read_text())
    if manifest.get("format") != FORMAT:
        raise UsageError(f"{folder}: a bundle of format {manifest.get('format')}, not {FORMAT}")
    built = report.load(folder / "build.jsonl")
    ran = {(r.suite, r.case, r.side): r for r in report.load(results_file)}
    header = report.Header.from_json(manifest["header"])
    merged = []
    for r in built:
        if r.status != "bundled":
            merged.append(r)
            continue
        got = ran.get((r.suite, r.case, r.side))
        if got is None:
            merged.append(replace(r, status="not run", error="the device did not run it"))
            continue
        notes = {**r.notes, **got.notes}
        times = {**r.times, **got.times}
        merged.append(replace(got, notes=notes, times=times))
    device_tvm = {r.side: r.notes.get("tvm", "") for r in ran.values()}
    for side, d in header.sides.items():
        if device_tvm.get(side) and device_tvm[side] != d.get("tvm"):
            d["tvm"] = f"{d.get('tvm')} (device: {device_tvm[side]})"
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(results_file.stat().st_mtime))
    context = f"{header.context}; run from a bundle on a {manifest['device']} device ({stamp})"
    return replace(header, context=context), merged

"""Bundles for a device with only TVM's runtime (`tvmfork conformance --bundle DIR`, `python
DIR/run.py`, `tvmfork conformance --from-bundle OUT`), round trip on this machine: the
runner runs in a fresh venv that holds numpy and nothing else, so every TVM it imports comes
from the bundle, without the compiler library.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from .lane import by_case, conformance

pytestmark = pytest.mark.conformance
PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"

# A node case; an op whose bfloat16 result stock gets wrong; one whose indices come from
# contrib sort (libtvm_runtime_extra, which runtime-only TVM does not load by itself) and
# whose dtype stock gets wrong; greedy generation through a static cache (stock cannot
# import it)
CASES = [
    "test_conv_with_strides_padding",
    "nn.functional.selu.bfloat16.0",
    "sort.float32.0",
    "llama-generate",
]


def device_venv(where: Path) -> Path:
    """A venv like the device's: numpy only."""
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    py = where / "bin" / "python"
    subprocess.run(
        [py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "numpy"],
        check=True,
    )
    assert subprocess.run([py, "-c", "import tvm"], capture_output=True).returncode != 0
    return py


def test_a_bundle_runs_where_only_the_runtime_is(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    r = conformance("ci", "-k", ",".join(CASES), "--bundle", str(bundle), "--device-python", PYTHON)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "4 case(s) on stock and fork" in r.stdout
    manifest = json.loads((bundle / "manifest.json").read_text())
    # generation and the transformers case stop at import on stock: no folder for them there
    assert {c["case"] for c in manifest["cases"]} == set(CASES)
    for side in ("stock", "fork"):
        names = zipfile.ZipFile(bundle / "runtime" / f"{side}.zip").namelist()
        assert "tvm/lib/libtvm_runtime.so" in names
        assert not [n for n in names if "libtvm_compiler" in n]

    out = tmp_path / "device"
    py = device_venv(tmp_path / "venv")
    run = subprocess.run(
        [py, str(bundle / "run.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
        check=False,
    )
    print(run.stdout, run.stderr[-3000:])
    assert run.returncode == 0, run.stderr[-3000:]
    device = [json.loads(ln) for ln in (out / "results.jsonl").read_text().splitlines()]
    for record in device:  # TVM came from the bundle, unpacked under OUT
        assert str(out / "env" / record["side"]) in record["tvm_file"], record

    report = tmp_path / "report"
    back = conformance("--from-bundle", str(out), "--report", str(report))
    assert back.returncode == 0, back.stderr[-3000:]
    rows = by_case(report)
    fork = {case: sides["fork"] for (_, case), sides in rows.items()}
    stock = {case: sides["stock"] for (_, case), sides in rows.items()}
    assert {c: fork[c]["status"] for c in CASES} == dict.fromkeys(CASES, "ok"), fork
    assert fork["llama-generate"]["tokens"] == 16
    assert stock["test_conv_with_strides_padding"]["status"] == "ok"
    assert stock["nn.functional.selu.bfloat16.0"]["status"] == "wrong"
    assert "int32, expected int64" in str(stock["sort.float32.0"]["error"])
    assert stock["llama-generate"]["stage"] == "import"  # as the build left it
    assert "run from a bundle on a cpu device" in (report / "report.md").read_text()


def test_a_bundle_keeps_to_its_limit(tmp_path: Path) -> None:
    """Two runtimes and the wheels take about 12 MiB, squeezenet's two libraries 11: with a
    limit of 16 it is left out, said so, and the node case is kept."""
    bundle = tmp_path / "bundle"
    globs = "squeezenet1_1,test_conv_with_strides_padding"
    args = ["ci", "-k", globs, "--bundle", str(bundle), "--device-python", PYTHON]
    r = conformance(*args, "--bundle-limit", "16")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "LEFT OUT (over the limit): 1: torchvision/squeezenet1_1" in r.stdout
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert [c["case"] for c in manifest["cases"]] == ["test_conv_with_strides_padding"]
    assert sum(f.stat().st_size for f in bundle.rglob("*") if f.is_file()) <= 16 * 2**20
    built = [json.loads(ln) for ln in (bundle / "build.jsonl").read_text().splitlines()]
    left = [b for b in built if b["case"] == "squeezenet1_1"]
    assert len(left) == 2 and all(b["status"] == "not run" for b in left), left
    assert "left out of the bundle" in left[0]["error"]
    # a folder that holds anything is never written into
    again = conformance(*args)
    assert again.returncode == 2 and "exists and is not empty" in again.stderr


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) not installed")
def test_a_cuda_bundle_carries_its_kernels(tmp_path: Path) -> None:
    """A CUDA bundle's libraries load on a machine with no CUDA compiler and no GPU: each
    CUDA module's kernels come from the bundle (assembled here for sm_90), looked up by the
    digest of the source the library stores. The driver is a stub here (`tvmfork.cudastub`),
    so the kernels are loaded, not launched."""
    from tvmfork import cudastub, toolchain

    cuda = toolchain.cuda_home_of(toolchain.nvcc(None))
    cudart = sorted(cuda.glob("lib*/libcudart.so.*")) + sorted(
        cuda.glob("targets/*/lib/libcudart.so.*")
    )
    if not cudart:
        pytest.skip(f"no libcudart in {cuda}")
    stub = cudastub.generate(cuda, tmp_path / "stub")
    (tmp_path / "stub" / "libcuda.so.1").symlink_to(stub)
    bundle = tmp_path / "bundle"
    args = ["onnx-node", "-k", "test_conv_with_strides_padding", "--side", "fork"]
    r = conformance(
        *args, "--target", "cuda", "--cuda-archs", "sm_90", "--bundle", str(bundle),
        "--device-python", PYTHON,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    (case,) = json.loads((bundle / "manifest.json").read_text())["cases"]
    folder = tmp_path / "case"
    with zipfile.ZipFile(bundle / case["folders"]["fork"]) as z:
        z.extractall(folder)
    (fatbin,) = (folder / "kernels").glob("*.fatbin")
    out = tmp_path / "env"
    with zipfile.ZipFile(bundle / "runtime" / "fork.zip") as z:
        z.extractall(out)
    for wheel in (bundle / "wheels").glob("*.whl"):
        with zipfile.ZipFile(wheel) as z:
            z.extractall(out)
    probe = f"""
import sys
sys.path.insert(0, {str(bundle)!r})
import run, tvm, tvm_ffi
from pathlib import Path
folder = Path({str(folder)!r})
kernels = {{p.stem: p for p in (folder / "kernels").glob("*.fatbin")}}
run.load_cuda_runtime(kernels)
given = []
inner = tvm_ffi.get_global_func("tvm_callback_cuda_compile")
tvm_ffi.register_global_func(
    "tvm_callback_cuda_compile", lambda s: given.append(inner(s)) or given[-1], override=True
)
tvm.runtime.load_module(str(folder / "case.so"))
print("kernels", len(given), given[0] == (folder / "kernels" / {fatbin.name!r}).read_bytes())
run.load_cuda_runtime({{}})
try:
    tvm.runtime.load_module(str(folder / "case.so"))
except Exception as exc:
    print("without them:", str(exc).strip().splitlines()[-1])
"""
    env = {
        **os.environ,
        "PYTHONPATH": str(out),
        "TVM_USE_RUNTIME_LIB": "1",
        "LD_LIBRARY_PATH": f"{tmp_path / 'stub'}:{cudart[0].parent}",
    }
    got = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=False
    )
    print(got.stdout, got.stderr[-3000:])
    assert got.returncode == 0, got.stderr[-3000:]
    assert "kernels 1 True" in got.stdout
    assert "the bundle has no kernels for this CUDA source" in got.stdout

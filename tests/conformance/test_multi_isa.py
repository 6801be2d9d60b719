"""The multi-ISA prototype (scripts/multi_isa.py) on the fork's TVM: one model built for the
x86-64 baseline and x86-64-v3, each level's code for its ISA, the best one loaded, and every
level computing what PyTorch computes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tvmfork import lock, settings, sides

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.conformance

SNIPPET = """
import json, sys
sys.path.insert(0, sys.argv[1])
import multi_isa as mi, numpy as np, torch, tvm
from pathlib import Path
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(32, 8, 3)
).eval()
x = torch.randn(1, 16, 20, 20)
with torch.no_grad():
    ref = model(x).numpy()
out = Path(sys.argv[2])
mi.build(mi._import(model, [x]), out, ["x86-64-v3", "x86-64"])
errs = {}
for lv in mi.levels_of(out):
    vm, _ = mi.load(out, level=lv)
    errs[lv] = float(np.abs(mi._call(vm, [tvm.runtime.tensor(x.numpy())]) - ref).max())
print(json.dumps({"auto": mi.load(out)[1], "levels": list(mi.levels_of(out)), "errs": errs}))
"""


def _fork_python() -> Path:
    subprocess.run([sys.executable, "-m", "tvmfork", "--repo", str(ROOT), "envs"], check=True)
    pin = lock.load(ROOT / "patches" / "lock.toml")
    return sides.side_python(settings.load(ROOT), pin, "fork")


def _host_has_v3() -> bool:
    flags = next(
        ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("flags")
    )
    return {"avx2", "fma", "f16c", "bmi2", "movbe"} <= set(flags.split(":")[1].split())


def _disassembly(lib: Path) -> str:
    return subprocess.run(
        ["objdump", "-d", str(lib)], capture_output=True, text=True, check=True
    ).stdout


def test_a_bundle_loads_its_best_level_and_each_level_is_right(tmp_path: Path) -> None:
    fork_py, bundle = _fork_python(), tmp_path / "bundle"
    r = subprocess.run(
        [str(fork_py), "-c", SNIPPET, str(ROOT / "scripts"), str(bundle)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "TVMFORK_ISA": ""},
    )
    assert r.returncode == 0, r.stderr[-4000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["levels"] == ["x86-64", "x86-64-v3"], got  # lowest first, whatever the order asked
    assert got["auto"] == ("x86-64-v3" if _host_has_v3() else "x86-64"), got
    assert all(err < 1e-4 for err in got["errs"].values()), got
    # each library holds its own ISA's code: 256-bit FMAs in v3, only SSE in the baseline
    v3, base = _disassembly(bundle / "x86-64-v3.so"), _disassembly(bundle / "x86-64.so")
    assert "vfmadd" in v3 and "%ymm" in v3
    assert "vfmadd" not in base and "%ymm" not in base and "mulps" in base


def test_a_level_the_bundle_lacks_is_refused_by_name(tmp_path: Path) -> None:
    fork_py, bundle = _fork_python(), tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "bundle.json").write_text(
        json.dumps({"levels": {"x86-64": {"library": "x86-64.so", "flags": ["sse2"]}}})
    )
    r = subprocess.run(
        [str(fork_py), str(ROOT / "scripts/multi_isa.py"), "run", str(bundle), "resnet18"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "TVMFORK_ISA": "x86-64-v4"},
    )
    assert r.returncode == 2 and "TVMFORK_ISA=x86-64-v4: this bundle has x86-64" in r.stderr, (
        r.stderr
    )


def test_build_and_run_from_the_command_line(tmp_path: Path) -> None:
    """`build` and `run` are separate processes: the model they make must be the same one
    (the same random weights), and `run` compares the loaded level's output with PyTorch's."""
    fork_py, bundle, script = _fork_python(), tmp_path / "sq.bundle", ROOT / "scripts/multi_isa.py"
    env = {**os.environ, "TVMFORK_ISA": ""}
    r = subprocess.run(
        [str(fork_py), str(script), "build", "squeezenet1_1", str(bundle), "--levels", "x86-64"],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    r = subprocess.run(
        [str(fork_py), str(script), "run", str(bundle), "squeezenet1_1"],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["level"] == "x86-64" and got["max_rel_err"] < 1e-3, got

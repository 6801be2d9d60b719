"""The conformance run as a user shapes it: the fork wheel the user names is the one tested and
the one the report names (`--wheel`), and a run split into shards (`--shard K/N`, e.g. over a
CI matrix) and joined (`conformance merge`) gives the whole run's report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from packaging.utils import parse_wheel_filename

from tvmfork import lock, settings, stock
from tvmfork import series as seriesmod
from tvmfork.wheel import overlay

from .lane import conformance, records

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.conformance


def _another_fork_wheel(tmp_path: Path) -> Path:
    """A real fork wheel that is not the series' overlay: the overlay of the series less its
    last Python patch that no other patch depends on, so its version (the series digest)
    differs."""
    patches = tmp_path / "patches"
    shutil.copytree(ROOT / "patches", patches)
    series = seriesmod.load(patches)
    needed = {d for p in series.patches for d in p.trailers.get("Depends-On", [])}
    last = next(
        p
        for p in reversed(series.patches)
        if not series.needs_build(p) and p.name not in needed and p.path.stem not in needed
    )
    names = [p.path.name for p in series.patches if p is not last]
    (patches / seriesmod.SERIES).write_text("".join(f"{n}\n" for n in names))
    last.path.unlink()
    shorter = seriesmod.load(patches)
    pin = lock.load(ROOT / "patches" / seriesmod.LOCK)
    stock_path, _ = stock.fetch(pin, settings.load(ROOT).cache_dir)
    return overlay.build(pin, shorter, stock_path, tmp_path / "wheel", python_only=True).path


def test_the_wheel_given_is_the_wheel_tested_and_named(tmp_path: Path) -> None:
    wheel = _another_fork_wheel(tmp_path)
    version = str(parse_wheel_filename(wheel.name)[1])
    report = tmp_path / "report"
    r = conformance(
        "torchvision", "-k", "resnet18", "--side", "fork", "--no-bench", "--wheel", str(wheel),
        "--report", str(report),
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    fork = json.loads((report / "run.json").read_text())["sides"]["fork"]
    # the version the fork's worker imported is the given wheel's, not the series' overlay's
    assert fork["tvm"] == version and fork["wheel"] == wheel.name, fork
    assert fork["sha256"] == stock.sha256_of(wheel)
    (rec,) = records(report)
    assert (rec["case"], rec["status"], rec["tvm"], rec["wheel"]) == (
        "resnet18",
        "ok",
        version,
        wheel.name,
    )
    assert f"fork: TVM {version} from {wheel.name}" in r.stdout
    assert f"fork: TVM {version} from {wheel.name}" in (report / "report.md").read_text()


def test_three_shards_merged_are_the_whole_run(tmp_path: Path) -> None:
    args = ["ci", "-k", "test_softmax_axis_*,test_tanh*,test_erf", "--jobs", "2"]
    whole = conformance(*args, "--report", str(tmp_path / "whole"))
    assert whole.returncode == 0, whole.stdout[-3000:] + whole.stderr[-3000:]
    shards = []
    for k in (1, 2, 3):
        folder = tmp_path / f"shard{k}"
        r = conformance(*args, "--shard", f"{k}/3", "--report", str(folder))
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        assert json.loads((folder / "run.json").read_text())["shard"] == f"{k}/3"
        shards.append(str(folder))
    merged = conformance("merge", *reversed(shards), "--report", str(tmp_path / "merged"))
    assert merged.returncode == 0, merged.stdout[-3000:] + merged.stderr[-3000:]

    def verdicts(folder: Path) -> list[tuple[object, ...]]:
        keys = ("suite", "case", "side", "status", "stage", "error", "tvm", "wheel")
        return [tuple(rec[k] for k in keys) for rec in records(folder)]

    want = verdicts(tmp_path / "whole")
    assert len(want) >= 2 * 8  # a case on each side, of at least 8 cases
    assert verdicts(tmp_path / "merged") == want

    def summary(stdout: str) -> list[str]:
        return [
            ln for ln in stdout.splitlines() if ln.startswith(("onnx-node:", "stock:", "fork:"))
        ]

    assert summary(merged.stdout) == summary(whole.stdout)
    again = conformance("merge", *shards[:2], "--report", str(tmp_path / "partial"))
    assert again.returncode == 2 and "shard(s) 3/3 missing" in again.stderr, again.stderr

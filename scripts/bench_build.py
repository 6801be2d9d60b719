"""Benchmark (not a test): what `tvmfork wheel --mode source` costs on top of the build itself.

Runs, in one go, on the checkout and build folder tvmfork is configured with (a source build
must have completed once):
  1. `ninja` in the build folder with nothing to do: the floor of any build;
  2. `tvmfork wheel --mode source` with nothing to recompile: scikit-build-core's configure and
     packaging plus tvmfork's apply check, manifest, linkage check and clean-venv import;
  3. with --touch FILE: that file recompiled for real (CCACHE_RECACHE) and relinked, through
     tvmfork: the warm rebuild after editing one native patch.
  4. with --sample N: N of the build's compile commands (evenly spread over ninja's list), each
     run twice into a scratch folder, as plain upstream runs it and through ccache with an empty
     cache of its own: what tvmfork's ccache costs a cold build.
It prints each wall time; the difference 2 - 1 is tvmfork's fixed overhead per build. A cold
build through tvmfork is the same Ninja graph as upstream's, plus 4's cost per object plus 2 - 1.

    python scripts/bench_build.py --touch src/s_tir/schedule/primitive/cache_read_write.cc
    python scripts/bench_build.py --sample 24
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tvmfork import settings as settingsmod

REPO = Path(__file__).resolve().parents[1]


def timed(cmd: list[str], env: dict[str, str] | None = None, cwd: str | None = None) -> float:
    start = time.monotonic()
    r = subprocess.run(
        cmd, env={**os.environ, **(env or {})}, cwd=cwd, capture_output=True, text=True
    )
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{(r.stdout + r.stderr)[-3000:]}")
    return time.monotonic() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", default="cpu")
    ap.add_argument("--touch", help="a source file of the checkout to recompile (step 3)")
    ap.add_argument("--sample", type=int, default=0, help="compile commands to time (step 4)")
    a = ap.parse_args()
    s = settingsmod.load(REPO)
    checkout = s.resolved_checkout()
    build = s.build.build_dir or checkout / "build" / f"tvmfork-{a.variant}"
    ninja = next(iter(sorted(s.cache_dir.glob("venvs/buildenv-*/bin/ninja"))), None)
    if ninja is None or not (build / "build.ninja").is_file():
        sys.exit(f"no finished source build in {build}: run `make wheel MODE=source` first")
    tool = [sys.executable, "-m", "tvmfork", "--repo", str(REPO), "wheel", "--mode", "source"]
    tool += ["--variant", a.variant]
    print(f"checkout {checkout}\nbuild folder {build}\ncpus {os.cpu_count()}")
    t_ninja = timed([str(ninja), "-C", str(build)])
    print(f"1. ninja, nothing to do:                 {t_ninja:7.1f} s")
    t_tool = timed(tool)
    print(f"2. tvmfork wheel, nothing to recompile:  {t_tool:7.1f} s")
    print(f"   tvmfork + scikit-build-core overhead per build: {t_tool - t_ninja:.1f} s")
    if a.touch:
        path = checkout / a.touch
        path.touch()
        t_warm = timed(tool, {"CCACHE_RECACHE": "1"})
        print(f"3. tvmfork wheel after editing {a.touch}: {t_warm:7.1f} s")
    if a.sample:
        plain, cached = ccache_cost(ninja, build, a.sample)
        print(f"4. {a.sample} cold compiles: plain {plain:7.1f} s, through ccache {cached:7.1f} s")
        print(f"   ccache on a cold build: {100 * (cached - plain) / plain:+.1f}%")


def ccache_cost(ninja: Path, build: Path, n: int) -> tuple[float, float]:
    """Seconds for n of the build's compile commands, without and with ccache (cache miss)."""
    compdb = subprocess.run(
        [str(ninja), "-C", str(build), "-t", "compdb"], capture_output=True, text=True, check=True
    )
    entries = [e for e in json.loads(compdb.stdout) if e.get("output", "").endswith(".cc.o")]
    entries = [e for e in entries if shlex.split(e["command"])[0].endswith("ccache")]
    if len(entries) < n:
        sys.exit(f"only {len(entries)} ccache'd compile commands in {build}")
    picked = entries[:: len(entries) // n][:n]
    plain = cached = 0.0
    with tempfile.TemporaryDirectory() as scratch:
        for i, e in enumerate(picked):
            argv = shlex.split(e["command"])
            out = argv.index("-o")
            argv[out + 1] = str(Path(scratch) / f"{i}.o")
            argv = [a for a in argv if a not in ("-MD", "-MMD")]
            for flag in ("-MF", "-MT"):  # no dependency file into the build folder
                if flag in argv:
                    del argv[argv.index(flag) : argv.index(flag) + 2]
            env = {"CCACHE_DIR": str(Path(scratch) / "ccache"), "CCACHE_RECACHE": "1"}
            plain += timed(argv[1:], env, e["directory"])
            cached += timed(argv, env, e["directory"])
    return plain, cached


if __name__ == "__main__":
    main()

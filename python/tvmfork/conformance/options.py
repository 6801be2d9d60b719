"""`tvmfork conformance`'s options, typed and checked once, from the command line: every later
step (collecting, running, reporting, sharding, merging) reads this, never the parser's
Namespace."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from tvmfork.conformance import suites
from tvmfork.conformance.bundles import MIB, Plan
from tvmfork.conformance.casework.catalog import globs
from tvmfork.errors import UsageError

MERGE = "merge"  # `tvmfork conformance merge REPORT...`: not a suite, the shards' join


@dataclass(frozen=True)
class Shard:
    """Shard `index` of `count` (1-based): the cases whose position in the whole run's
    collected order is index - 1 modulo count. The order is deterministic (suites in the order
    named, each suite's cases in its own sorted order), so N runs with the same options and
    shards 1/N .. N/N cover every case once."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        k, sep, n = text.partition("/")
        if not sep or not k.isdigit() or not n.isdigit() or not 1 <= int(k) <= int(n):
            raise UsageError(f"--shard {text}: give K/N with 1 <= K <= N, e.g. --shard 2/3")
        return cls(int(k), int(n))

    def take(self, items: list[object]) -> list[int]:
        """The positions of `items` this shard runs."""
        return [i for i in range(len(items)) if i % self.count == self.index - 1]

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass(frozen=True)
class Options:
    """What a conformance run was asked for. `suites` are names of `suites.SUITES`;
    `patterns` the `-k` globs; `target` a name of `casework.targets.TARGETS` or a TVM target
    string; `report` the report folder (None: out/conformance); `wheel` the fork wheel to test
    (None: the series' overlay); `merge` the shard reports to join instead of running. No
    defaults here: the parser (args.py) holds them, and `from_args` sets every field."""

    suites: list[str]
    patterns: list[str]
    onnx: list[Path]
    torch_modules: list[Path]
    hf: list[Path]
    with_pkgs: list[str]
    side: str
    target: str
    cuda_archs: str
    rpc_tracker: str | None
    rpc_key: str | None
    cross_cc: str | None
    emulated: int | None
    jobs: int
    timeout: float | None
    reps: int
    bench: bool
    ort: bool
    inductor: bool
    threads: int | None
    samples: int
    report: Path | None
    wheel: Path | None
    stock_ffi: str
    against: str | None
    shard: Shard | None
    merge: list[Path]
    bundle: Plan | None
    from_bundle: Path | None

    @property
    def sides(self) -> list[str]:
        return ["stock", "fork"] if self.side == "both" else [self.side]

    def timed(self, remote: bool, compile_only: bool) -> bool:
        """Whether passing models are timed: not where asked not to, and never on a remote
        device, a compile-only target or into a bundle (nothing is measured there)."""
        return self.bench and not remote and not compile_only and self.bundle is None


def _count(value: int | None, flag: str) -> None:
    if value is not None and value < 1:
        raise UsageError(f"{flag} {value}: give a count of 1 or more")


def from_args(a: argparse.Namespace) -> Options:
    """The options of `tvmfork conformance`, checked: a usage error for a bad one, before
    anything is built."""
    _count(a.threads, "--threads")
    _count(a.side_jobs, "--jobs")
    _count(a.emulated, "--emulated")
    _count(a.samples, "--samples")
    report = Path(a.report) if a.report else None
    if report is not None and (report.suffix in (".md", ".jsonl", ".json") or report.is_file()):
        raise UsageError(
            f"--report {a.report}: give a folder (report.md and results.jsonl go in it), "
            f"e.g. --report {report.parent}"
        )
    if a.emulated is not None and (a.target != "aarch64" or a.rpc_tracker):
        raise UsageError("--emulated N runs --target aarch64, on a tracker of its own")
    names: list[str] = list(a.suites)
    merge: list[Path] = []
    if names[:1] == [MERGE]:
        merge = [Path(p) for p in names[1:]]
        if not merge:
            raise UsageError("conformance merge: name the shards' report folders to join")
        if a.shard:
            raise UsageError("conformance merge joins shards: no --shard")
        names = []
    from_bundle = Path(a.from_bundle).resolve() if a.from_bundle else None
    if from_bundle is not None and (names or a.onnx or a.torch_module or a.hf or a.bundle):
        raise UsageError("--from-bundle reads a device's run back: no suites, cases or --bundle")
    if from_bundle is None and not merge and not names and not (a.onnx or a.torch_module or a.hf):
        names = ["ci"]
    suites.check_names(names)
    bundle = None
    if a.bundle:
        if a.rpc_tracker or a.emulated or merge:
            raise UsageError("--bundle compiles here for a device run later: no RPC devices")
        bundle = Plan(Path(a.bundle).resolve(), a.bundle_limit * MIB, a.device_python)
        bundle.check()
    wheel = Path(a.wheel).resolve() if a.wheel else None
    if wheel is not None and not wheel.is_file():
        raise UsageError(f"--wheel {a.wheel}: no such file")
    if wheel is not None and wheel.suffix != ".whl":
        raise UsageError(f"--wheel {a.wheel}: not a wheel (.whl)")
    return Options(
        suites=names,
        patterns=globs(a.k),
        onnx=[Path(p) for p in a.onnx],
        torch_modules=[Path(m) for m in a.torch_module],
        hf=[suites.hf_dir(Path(d)) for d in a.hf],
        with_pkgs=list(a.with_pkgs),
        side=a.side,
        target=a.target,
        cuda_archs=a.cuda_archs,
        rpc_tracker=a.rpc_tracker,
        rpc_key=a.rpc_key,
        cross_cc=a.cross_cc,
        emulated=a.emulated,
        jobs=a.side_jobs,
        timeout=a.timeout,
        reps=a.reps,
        bench=not a.no_bench,
        ort=a.ort,
        inductor=a.inductor,
        threads=a.threads,
        samples=a.samples,
        report=report.resolve() if report is not None else None,
        wheel=wheel,
        stock_ffi=a.stock_ffi,
        against=a.against,
        shard=Shard.parse(a.shard) if a.shard else None,
        merge=merge,
        bundle=bundle,
        from_bundle=from_bundle,
    )

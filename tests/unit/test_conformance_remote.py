"""Which target and device the conformance options name, and the usage errors before anything
is built: an RPC device without a tracker or key, a malformed tracker address, a missing
cross compiler, CUDA architectures that are not ones."""

from __future__ import annotations

import json

import pytest

from tvmfork.conformance import remote
from tvmfork.conformance.casework.spec import Remote, RunConfig
from tvmfork.errors import UsageError

pytestmark = pytest.mark.unit


def test_a_local_target_needs_no_device() -> None:
    assert remote.resolve("llvm", None, None, None) == RunConfig("llvm")
    assert remote.resolve("host", None, None, None) == RunConfig("host")
    portable = json.loads(remote.resolve("portable", None, None, None).target)
    assert portable == {"kind": "llvm", "mcpu": "x86-64,x86-64-v3,x86-64-v4"}
    assert remote.resolve("llvm -mcpu=znver3", None, None, None) == RunConfig("llvm -mcpu=znver3")


def test_aarch64_is_a_triple_and_its_cross_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote.shutil, "which", lambda name: f"/usr/bin/{name}")
    config = remote.resolve("aarch64", "10.0.0.5:9190", "rk3588", None)
    assert json.loads(config.target) == {
        "kind": "llvm",
        "mtriple": "aarch64-linux-gnu",
        "mattr": ["+neon"],
    }
    assert config.remote == Remote("10.0.0.5:9190", "rk3588", "aarch64-linux-gnu-g++")
    # a device like this machine is linked by the default compiler
    assert remote.resolve("llvm", "h:1", "x86", None) == RunConfig(
        "llvm", remote=Remote("h:1", "x86")
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("aarch64", None, None, None), "--target aarch64 runs on a device: give --rpc-tracker"),
        (("llvm", None, "key", None), "--rpc-key and --cross-cc need --rpc-tracker"),
        (("aarch64", "no-port", "k", None), "--rpc-tracker no-port: give HOST:PORT"),
        (("aarch64", "host:90x", "k", None), "give HOST:PORT"),
        (("aarch64", "host:9190", None, None), "--rpc-tracker needs --rpc-key KEY"),
    ],
)
def test_bad_device_options_are_usage_errors(args: tuple[str | None, ...], message: str) -> None:
    target, tracker, key, cc = args
    assert target is not None
    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        remote.resolve(target, tracker, key, cc)


def test_a_missing_cross_compiler_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote.shutil, "which", lambda name: None)
    with pytest.raises(UsageError, match="apt-get install g\\+\\+-aarch64-linux-gnu"):
        remote.resolve("aarch64", "h:9190", "k", None)


def test_cuda_targets_the_first_architecture(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote.shutil, "which", lambda name: "/usr/bin/nvcc")
    config = remote.resolve("cuda", None, None, None, "sm_80,sm_89,sm_90")
    assert json.loads(config.target) == {"kind": "cuda", "arch": "sm_80"}
    assert config.assemble == ("sm_80", "sm_89", "sm_90") and config.remote is None
    config = remote.resolve("cuda", None, None, None, "sm_90a")
    assert json.loads(config.target) == {"kind": "cuda", "arch": "sm_90a"}
    for bad in ("", "sm80", "compute_80", "sm_80,gfx90a"):
        with pytest.raises(UsageError, match="give CUDA architectures"):
            remote.cuda_archs(bad)
    with pytest.raises(UsageError, match="compile-only here: no --rpc-tracker"):
        remote.resolve("cuda", "h:1", "k", None)
    monkeypatch.setattr(remote.shutil, "which", lambda name: None)
    with pytest.raises(UsageError, match="needs nvcc"):
        remote.cuda_archs("sm_80")

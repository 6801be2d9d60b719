"""Which target and device the conformance options name, and the usage errors before anything
is built: an RPC device without a tracker or key, a malformed tracker address, a missing
cross compiler, CUDA architectures that are not ones."""

from __future__ import annotations

import json

import pytest

from tvmfork.conformance import remote
from tvmfork.conformance.spec import Remote
from tvmfork.errors import UsageError

pytestmark = pytest.mark.unit


def test_a_local_target_needs_no_device() -> None:
    assert remote.resolve("llvm", None, None, None) == ("llvm", None)
    assert remote.resolve("host", None, None, None) == ("host", None)


def test_aarch64_is_a_triple_and_its_cross_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote.shutil, "which", lambda name: f"/usr/bin/{name}")
    target, device = remote.resolve("aarch64", "10.0.0.5:9190", "rk3588", None)
    assert json.loads(target) == {
        "kind": "llvm",
        "mtriple": "aarch64-linux-gnu",
        "mattr": ["+neon"],
    }
    assert device == Remote("10.0.0.5:9190", "rk3588", "aarch64-linux-gnu-g++")
    # a device like this machine is linked by the default compiler
    assert remote.resolve("llvm", "h:1", "x86", None) == ("llvm", Remote("h:1", "x86", ""))


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
    assert json.loads(remote.cuda_target("sm_80,sm_89,sm_90")) == {"kind": "cuda", "arch": "sm_80"}
    assert json.loads(remote.cuda_target("sm_90a")) == {"kind": "cuda", "arch": "sm_90a"}
    for bad in ("", "sm80", "compute_80", "sm_80,gfx90a"):
        with pytest.raises(UsageError, match="give CUDA architectures"):
            remote.cuda_target(bad)
    monkeypatch.setattr(remote.shutil, "which", lambda name: None)
    with pytest.raises(UsageError, match="needs nvcc"):
        remote.cuda_target("sm_80")

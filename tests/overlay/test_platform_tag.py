"""auditwheel on the stock wheel: the manylinux policy a source build's wheel is tagged with
comes from the same reading, so check it against a wheel whose tag upstream chose."""

from __future__ import annotations

from pathlib import Path

import pytest

from tvmfork import lock as lockmod
from tvmfork import settings, stock
from tvmfork.errors import VerifyError
from tvmfork.wheel import platform

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.overlay


def test_stock_wheel_reads_as_upstream_tagged_it() -> None:
    s = settings.load(ROOT)
    wheel, _ = stock.fetch(lockmod.load(ROOT / "patches" / "lock.toml"), s.cache_dir, None)
    tool = platform.tool(s.cache_dir, s.python)
    found = platform.audit(wheel, tool, cuda=True)  # the stock wheel is CUDA-enabled
    assert found.platform_tag == "manylinux_2_27_x86_64"  # its name: manylinux_2_27 (and _2_28)
    assert found.glibc == "2.27"
    assert "libtvm_ffi.so" in found.external
    with pytest.raises(VerifyError, match="libcuda"):
        platform.audit(wheel, tool, cuda=False)  # a cpu wheel may not need the CUDA libraries

"""Every patch's regression test on the source-built wheel: fails on stock, passes on it.

This is `tvmfork verify --wheel <source wheel>`: the native patches can only be proven here
(an overlay cannot carry them), and the Python ones must hold on a source build too.
"""

from __future__ import annotations

import contextlib
import io

import pytest

from tvmfork import cli

from .conftest import REPO, Native


def test_verify_every_patch_on_the_source_wheel(
    native: Native, capsys: pytest.CaptureFixture[str]
) -> None:
    if not any(p.native for p in native.series.patches):
        pytest.skip("the series has no native patches; the overlay lane proves the rest")
    # Live on the terminal (each patch's step as it runs: verify takes minutes); the table,
    # on stdout, is kept to check.
    with capsys.disabled(), contextlib.redirect_stdout(io.StringIO()) as table:
        code = cli.main(["--repo", str(REPO), "verify", "--wheel", str(native.wheel)])
    out = table.getvalue()
    print(out)
    assert code == 0, out
    for p in native.series.patches:
        assert p.name.removesuffix(".patch") in out or p.name in out

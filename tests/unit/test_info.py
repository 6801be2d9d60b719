"""`tvmfork info` reads an environment's TVM without importing it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tvmfork import info

from .conftest import write

pytestmark = pytest.mark.unit


def _fake_env(root: Path, tvm: str, ffi: str, manifest: dict[str, object] | None) -> Path:
    write(root / "tvm/__init__.py", "raise SystemExit('info must not import tvm')\n")
    write(root / f"apache_tvm-{tvm}.dist-info/METADATA", f"Name: apache-tvm\nVersion: {tvm}\n")
    write(
        root / f"apache_tvm_ffi-{ffi}.dist-info/METADATA", f"Name: apache-tvm-ffi\nVersion: {ffi}\n"
    )
    if manifest is not None:
        write(root / "tvm/fork_manifest.json", json.dumps(manifest))
    return root


MANIFEST = {
    "mode": "overlay",
    "variant": "stock-binary",
    "tvm_ffi_requirement": ">=0.1.13.post2,<0.1.15",
    "upstream": {"tag": "v0.26.0", "commit": "c7b458e9"},
    "patches": [
        {"name": "a.patch", "native": False, "included": True, "sha256": "ab" * 32},
        {"name": "b.patch", "native": True, "included": False, "sha256": "cd" * 32},
    ],
}


def test_fork_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "PYTHONPATH", str(_fake_env(tmp_path, "0.26.0+fork.x", "0.1.15.post2", MANIFEST))
    )
    data = info.gather(sys.executable)
    assert data["tvm"] == "0.26.0+fork.x" and data["tvm_ffi_in_range"] is False
    text = info.render(data)
    assert "OUT OF RANGE: >=0.1.13.post2,<0.1.15" in text
    assert "LEFT OUT native" in text and "included python" in text


def test_stock_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(_fake_env(tmp_path, "0.26.0", "0.1.14.post1", None)))
    assert "stock TVM (no fork manifest)" in info.render(info.gather(sys.executable))


def test_the_active_venv_is_inspected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After `pip install out/*.whl` in the user's venv, `tvmfork info` reports on that venv,
    not on tvmfork's own interpreter, and says which one it looked at."""
    import venv

    user = tmp_path / "user-venv"
    venv.create(user, with_pip=False)
    site = next(user.glob("lib/python*/site-packages"))
    _fake_env(site, "0.26.0+fork.abc", "0.1.14.post1", MANIFEST)
    monkeypatch.setenv("VIRTUAL_ENV", str(user))
    data = info.gather(None)
    assert data["python"] == str(user / "bin" / "python")
    assert data["tvm"] == "0.26.0+fork.abc"
    assert "the active venv ($VIRTUAL_ENV)" in info.render(data)
    # a venv folder given with --python works the same
    monkeypatch.delenv("VIRTUAL_ENV")
    assert info.gather(str(user))["tvm"] == "0.26.0+fork.abc"


@pytest.mark.parametrize(
    ("arg", "message"),
    [("/nonexistent/python", "no such interpreter"), ("EMPTY_DIR", "a folder with no bin/python")],
)
def test_bad_python_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arg: str, message: str
) -> None:
    from tvmfork import cli

    if arg == "EMPTY_DIR":
        arg = str(tmp_path)
    assert cli.main(["info", "--python", arg]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "import importlib" not in err


def test_closed_pipe_is_not_a_traceback() -> None:
    """`tvmfork info --json | head`: the reader is gone before tvmfork writes."""
    import os
    import subprocess

    read, write_end = os.pipe()
    os.close(read)  # every write to the pipe now fails with EPIPE
    try:
        r = subprocess.run(
            [sys.executable, "-m", "tvmfork", "info", "--json"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    finally:
        os.close(write_end)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr

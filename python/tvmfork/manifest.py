"""The manifest a fork wheel carries (`tvm/fork_manifest.json`), and reading it back."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from tvmfork.errors import UsageError
from tvmfork.lock import Lock
from tvmfork.series import Series

MANIFEST_PATH = "tvm/fork_manifest.json"
FORMAT = 1


def build(
    lock: Lock,
    series: Series,
    included: set[str],
    *,
    version: str,
    mode: str,
    variant: str,
    extra: dict[str, Any] | None = None,
    ffi_requirement: str | None = None,
) -> dict[str, Any]:
    """`ffi_requirement`: the tvm-ffi the wheel needs (default: the lock's bound for the pin)."""
    return {
        "format": FORMAT,
        "version": version,
        "mode": mode,
        "variant": variant,
        "upstream": {"url": lock.url, "tag": lock.tag, "commit": lock.commit},
        "series_digest": series.digest,
        "tvm_ffi_requirement": ffi_requirement or lock.tvm_ffi_requirement,
        "patches": [
            {
                "name": p.name,
                "subject": p.subject,
                "sha256": p.sha256,
                "native": p.native,
                "included": p.name in included,
                "upstream_status": p.trailer("Upstream-Status"),
            }
            for p in series.patches
        ],
        **(extra or {}),
    }


def dumps(manifest: dict[str, Any]) -> bytes:
    return (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()


def from_wheel(wheel: Path) -> dict[str, Any] | None:
    """The manifest inside a wheel file, or None for a wheel without one (stock)."""
    with zipfile.ZipFile(wheel) as zf:
        if MANIFEST_PATH not in zf.namelist():
            return None
        data: dict[str, Any] = json.loads(zf.read(MANIFEST_PATH))
        return data


def included_in(wheel: Path) -> set[str]:
    """The patches a fork wheel says it carries; an error for a wheel without a manifest."""
    man = from_wheel(wheel)
    if man is None:
        raise UsageError(f"{wheel.name} has no {MANIFEST_PATH}: not a tvmfork wheel")
    return {p["name"] for p in man.get("patches", []) if p.get("included")}

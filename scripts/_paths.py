"""The conformance worker's folder on the path of a script run with a TVM venv's Python, so
that the script shares the worker's parts (`casework`: timing, targets) and suites, and
imports nothing of tvmfork itself (the TVM venvs do not have it)."""

from __future__ import annotations

import sys
from pathlib import Path

CONFORMANCE = Path(__file__).resolve().parents[1] / "python" / "tvmfork" / "conformance"
if str(CONFORMANCE) not in sys.path:
    sys.path.insert(0, str(CONFORMANCE))

"""scripts/bench_module_ab.py's swap of a module's functions and methods for an old file's."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from bench_module_ab import _old_functions


def _module() -> types.ModuleType:
    module = types.ModuleType("installed")
    exec(
        "def helper():\n    return 'new'\n"
        "def entry():\n    return helper()\n"
        "class Rule:\n    @staticmethod\n    def step():\n        return helper() + '-step'\n"
        "    def run(self):\n        return self.step()\n",
        module.__dict__,
    )
    return module


def test_old_functions_and_methods_replace_the_installed_ones_then_come_back(tmp_path):
    module = _module()
    old = tmp_path / "old.py"
    old.write_text(
        "def helper():\n    return 'old'\n"
        "def only_old():\n    return 0\n"
        "class Rule:\n    @staticmethod\n    def step():\n        return helper() + '-old-step'\n"
    )
    rule = module.Rule()
    with _old_functions(module, str(old)):
        # the old helper, called by the installed function that the old file does not define
        assert module.entry() == "old"
        assert rule.run() == "old-old-step"
        assert "only_old" not in module.__dict__
    assert module.entry() == "new"
    assert rule.run() == "new-step"


def test_an_old_file_sharing_nothing_with_the_module_is_refused(tmp_path):
    old = tmp_path / "old.py"
    old.write_text("def unrelated():\n    return 1\n")
    with pytest.raises(SystemExit, match="defines no function or method"):
        with _old_functions(_module(), str(old)):
            pass

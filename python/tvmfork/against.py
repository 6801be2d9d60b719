"""`verify --against RELEASE`: which Python patches another release's wheel still takes.

A patch that applies as text can still break that release: its code calls names the release
renamed (0.27 moved `tvm.arith` to `tvm.sym`), and one such file stops `import tvm` for every
test. So after the textual check (`overlay.applicable`) the chosen patches' modules are
imported on the release's own package with those patches written over it (an `alone`
overlay tree), and a small torch model is imported, compiled and run there (a name renamed
under a pass fails only then: 0.27 has no `tvm.tirx.stmt_functor`). A module that imports on
the bare release and not with the patches, or the model failing only with them, drops the
patches that change the file where it failed (the innermost traceback frame in a patched
file; bisected over the patches when no frame is in one), and the patches that depend on
them, each with the error as its reason. Repeated until everything works as it does on the
bare release.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tvmfork import alone, proc, ui
from tvmfork.errors import PatchError
from tvmfork.series import SHIPPED_PREFIX, Patch, Series

# run with the tree first on sys.path: import each module, report the failures as JSON
_PROBE = r"""
import importlib, json, sys, traceback
out = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt from a module too
        frames = [f.filename for f in traceback.extract_tb(exc.__traceback__)]
        out[name] = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:300],
                     "frames": frames}
        if name == "tvm":
            break
if "tvm" not in out:  # then compile and run a small model, as nearly every test does
    try:
        exec(compile(SMOKE, "<smoke>", "exec"), {})
    except BaseException as exc:
        frames = [f.filename for f in traceback.extract_tb(exc.__traceback__)]
        out[SMOKE_NAME] = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:300],
                           "frames": frames}
print("TVMFORK-PROBE " + json.dumps(out))
"""

# the probe's last step: a torch model with a conv, a dense layer and elementwise ops through
# torch.export, the importer, the default pipeline and the VM, checked against PyTorch
SMOKE_NAME = "a small torch model, imported, compiled and run"
SMOKE = r"""
import numpy as np, torch, tvm
from tvm import relax
from tvm.relax.frontend.torch import from_exported_program

class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.fc = torch.nn.Linear(4 * 8 * 8, 5)
    def forward(self, x):
        y = torch.relu(self.conv(x))
        return torch.softmax(self.fc(y.flatten(1)) * 2.0 + 1.0, dim=-1)

torch.manual_seed(0)
m, x = M().eval(), torch.randn(2, 3, 8, 8)
mod = from_exported_program(torch.export.export(m, (x,)))
ex = tvm.compile(mod, "llvm")
vm = relax.VirtualMachine(ex, tvm.cpu())
got = vm["main"](tvm.runtime.tensor(x.numpy()))
got = got if hasattr(got, "numpy") else got[0]
with torch.no_grad():
    want = m(x).numpy()
np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)
"""


def module_of(source_path: str) -> str | None:
    """`python/tvm/a/b.py` -> `tvm.a.b`, `python/tvm/a/__init__.py` -> `tvm.a`; None for a
    file that is not a module."""
    if not source_path.startswith(SHIPPED_PREFIX) or not source_path.endswith(".py"):
        return None
    parts = source_path[len("python/") : -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _probe(python: Path, tree: Path, code: str, args: list[str], tag: str) -> Any:
    """Run `code` with `tree` first on PYTHONPATH; the JSON it prints after `tag`."""
    r = proc.run(
        [python, "-c", code, *args],
        env={"PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"},
        check=False,
    )
    for line in reversed(r.stdout.splitlines()):
        if line.startswith(tag + " "):
            return json.loads(line[len(tag) + 1 :])
    raise PatchError(f"the {tag} probe did not finish (exit {r.returncode}):\n{r.stdout[-2000:]}")


def import_failures(python: Path, tree: Path, modules: list[str]) -> dict[str, dict[str, object]]:
    """Each of `modules` that fails to import with `tree` first on PYTHONPATH: its error and
    the files of its traceback (`tvm` first: when it fails, nothing else is tried)."""
    code = f"SMOKE = {SMOKE!r}\nSMOKE_NAME = {SMOKE_NAME!r}\n{_PROBE}"
    found: dict[str, dict[str, object]] = _probe(
        python, tree, code, ["tvm", *modules], "TVMFORK-PROBE"
    )
    for info in found.values():  # paths in the tree read as the package's own
        info["error"] = str(info["error"]).replace(f"{tree}/", "")
    return found


# run with the tree first on sys.path: argv[1] is {module: [dotted names]}; prints, for each
# module, the names it uses that do not resolve on this TVM (a module's attribute missing)
_NAMES_PROBE = r"""
import importlib, json, sys, types
ALIASES = {"tvm", "relax", "tirx", "te", "topi", "s_tir", "arith"}
out = {}
for name, dotted in json.loads(sys.argv[1]).items():
    try:
        mod = importlib.import_module(name)
    except BaseException:
        continue  # the import probe reports it
    for chain in dotted:
        head, *parts = chain.split(".")
        obj = vars(mod).get(head)
        if not isinstance(obj, types.ModuleType):
            if head not in ALIASES:
                continue  # a local or a non-module: nothing to check statically
            try:
                obj = importlib.import_module("tvm" if head == "tvm" else "tvm." + head)
            except ImportError:
                continue
        if obj.__name__.split(".")[0] != "tvm":
            continue  # numpy's, torch's: the same on both sides
        for part in parts:
            if not isinstance(obj, types.ModuleType):
                break  # an attribute of a class or value: not checked
            if not hasattr(obj, part):
                try:
                    obj = importlib.import_module(obj.__name__ + "." + part)
                    continue
                except ImportError:
                    out.setdefault(name, []).append(chain)
                    break
            obj = getattr(obj, part)
print("TVMFORK-NAMES " + json.dumps(out))
"""

_DOTTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)")


def _code_of(line: str, in_doc: bool) -> tuple[str, bool]:
    """The code of one source line outside strings and comments, and whether a triple-quoted
    string is still open after it (`in_doc`: open before it)."""
    code = []
    for k, part in enumerate(re.split(r'"""|\'\'\'', line)):
        if k:
            in_doc = not in_doc
        if not in_doc:
            part = re.sub(r"'[^']*'|\"[^\"]*\"", "''", part)  # one-line string literals
            code.append(part.split("#", 1)[0])
            if "#" in part:
                break
    return " ".join(code), in_doc


def added_names(patch: Patch) -> dict[str, set[str]]:
    """module -> the dotted names (`relax.Constant`) in the code the patch adds to it: its
    `+` lines, outside comments and strings (a hunk's new side read from its start, which is
    taken to be outside a docstring)."""
    out: dict[str, set[str]] = {}
    module: str | None = None
    in_doc = False
    for line in patch.code.decode("utf-8", "replace").splitlines():
        if line.startswith("+++ "):
            module = module_of(line[len("+++ b/") :]) if line.startswith("+++ b/") else None
        elif line.startswith("@@"):
            in_doc = False
        elif module and line[:1] in ("+", " "):
            code, in_doc = _code_of(line[1:], in_doc)
            if line.startswith("+"):
                out.setdefault(module, set()).update(_DOTTED.findall(code))
    return out


def missing_names(python: Path, tree: Path, wanted: dict[str, set[str]]) -> dict[str, list[str]]:
    """module -> the names of `wanted[module]` that do not resolve with `tree` first on
    PYTHONPATH (a TVM module lacking the attribute)."""
    arg = json.dumps({m: sorted(n) for m, n in wanted.items()})
    found: dict[str, list[str]] = _probe(python, tree, _NAMES_PROBE, [arg], "TVMFORK-NAMES")
    return found


def _culprit_file(tree: Path, frames: list[str], touched: set[str], module: str) -> str | None:
    """The source path of the innermost traceback frame in a file the patches change (the
    module's own file when no frame is in one)."""
    prefix = str(tree) + "/"
    for f in reversed(frames):
        if f.startswith(prefix):
            src = "python/" + f[len(prefix) :]
            if src in touched:
                return src
    own = [s for s in touched if module_of(s) == module]
    return own[0] if own else None


def _what(module: str) -> str:
    return SMOKE_NAME if module == SMOKE_NAME else f"`import {module}`"


def _first_failing(
    python: Path,
    package: Path,
    wheel: Path,
    cache: Path,
    chosen: list[Patch],
    module: str,
    modules: list[str],
) -> Patch:
    """The patch of `chosen` whose prefix first fails `module` (bisected: a failure no
    traceback frame ties to a patched file)."""
    lo, hi = 0, len(chosen)  # chosen[:lo] passes, chosen[:hi] fails
    while hi - lo > 1:
        mid = (lo + hi) // 2
        tree = alone.overlay_tree(package, wheel, chosen[:mid], cache)
        if module in import_failures(python, tree, modules):
            hi = mid
        else:
            lo = mid
    return chosen[hi - 1]


def _drop(
    series: Series, chosen: list[Patch], bad: set[str], why: str, dropped: dict[str, str]
) -> list[Patch]:
    """`chosen` less `bad` and the patches that depend on one, each reason in `dropped`."""
    for p in chosen:
        if p.name not in bad and any(d.name in bad for d in series.dependencies(p)):
            dropped[p.name] = f"its Depends-On is dropped ({why})"
            bad.add(p.name)
    for name in bad:
        dropped.setdefault(name, why)
    ui.note(f"    {len(bad)} patch(es) dropped: {why}")
    return [p for p in chosen if p.name not in bad]


def importable(
    series: Series,
    chosen: list[Patch],
    python: Path,
    wheel: Path,
    cache: Path,
) -> tuple[list[Patch], dict[str, str]]:
    """`chosen` less the patches that break the release (`python`'s package, `wheel` its
    wheel): an import of a module they change, or the small model's compile and run, that
    works there without them, or a TVM name they add a use of that the release does not
    have; and why each was dropped."""
    package = alone.stock_package(python)
    modules = sorted({m for p in chosen for f in p.python_files if (m := module_of(f))})
    bare = import_failures(python, alone.overlay_tree(package, wheel, [], cache), modules)
    if "tvm" in bare:
        raise PatchError(f"`import tvm` fails on {wheel.name} itself: {bare['tvm']['error']}")
    if SMOKE_NAME in bare:
        ui.note(f"    (on {wheel.name} itself, {SMOKE_NAME} fails: {bare[SMOKE_NAME]['error']})")
    names = {p.name: added_names(p) for p in chosen}
    dropped: dict[str, str] = {}
    while True:
        tree = alone.overlay_tree(package, wheel, chosen, cache)
        fails = {m: v for m, v in import_failures(python, tree, modules).items() if m not in bare}
        if fails:
            module, info = next(iter(fails.items()))
            touched = {f for p in chosen for f in p.python_files}
            frames = [str(f) for f in info["frames"]]  # type: ignore[attr-defined]
            culprit = _culprit_file(tree, frames, touched, module)
            if culprit is not None:
                why = f"applies, but {_what(module)} then fails in {culprit}: {info['error']}"
                bad = {p.name for p in chosen if culprit in p.python_files}
            else:
                first = _first_failing(python, package, wheel, cache, chosen, module, modules)
                why = f"applies, but {_what(module)} then fails: {info['error']}"
                bad = {first.name}
            chosen = _drop(series, chosen, bad, why, dropped)
            continue
        wanted: dict[str, set[str]] = {}
        for p in chosen:
            for module, used in names[p.name].items():
                wanted.setdefault(module, set()).update(used)
        missing = missing_names(python, tree, wanted)
        if not missing:
            return chosen, dropped
        module, absent = next(iter(missing.items()))
        name = absent[0]
        why = f"applies, but uses `{name}` in {module}, which {wheel.name} does not have"
        bad = {p.name for p in chosen if name in names[p.name].get(module, set())}
        chosen = _drop(series, chosen, bad, why, dropped)

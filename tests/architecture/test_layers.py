"""The layers read in one direction; the query layer and the CLI start without heavy imports."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_import_linter_contracts_hold() -> None:
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if lint is None:
        pytest.skip("import-linter is not installed (it is in the test extra)")
    result = subprocess.run([lint], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


EXPLORER_MAY_IMPORT = {"gero_runner.errors", "gero_runner.escape",
                       "gero_runner.result_classes", "gero_runner.backends.names"}
"""The runner's modules the explorer imports itself (issue 39): it acts through gero.api."""


def test_the_explorer_contracts_forbid_every_other_runner_module() -> None:
    """The two contracts that keep the explorer on gero.api list every module of the
    runner's top level and of its backends but the four it may import: a module added
    later is forbidden to it too, not missed."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"]
    forbidden = {m for c in contracts
                 if c["name"].startswith("The explorer reaches the runner only through")
                 for m in c["forbidden_modules"]}
    runner = ROOT / "runner" / "gero_runner"

    def children(package: Path, prefix: str) -> set[str]:
        return {f"{prefix}.{p.stem}" for p in package.iterdir()
                if (p.suffix == ".py" and p.stem != "__init__")
                or (p / "__init__.py").is_file()}

    modules = ({"gero_runner", "gero_runner.backends"} | children(runner, "gero_runner")
               | children(runner / "backends", "gero_runner.backends"))
    unlisted = sorted(modules - EXPLORER_MAY_IMPORT - forbidden)
    assert not unlisted, (f"{unlisted}: add to the forbidden_modules of the explorer's "
                          "contracts in pyproject.toml (it acts through gero.api)")
    assert forbidden == modules - EXPLORER_MAY_IMPORT, sorted(forbidden - modules)


@pytest.mark.parametrize("module", ["gero_runner.storage.reader", "gero.query.summary",
                                    "gero_cli", "gero_runner.schema", "gero", "gero.testing",
                                    "gero.query.report", "gero.html_report"])
@pytest.mark.slow
def test_headless_modules_do_not_load_textual_or_onnxruntime(module: str) -> None:
    code = (f"import sys, {module}; "
            "print(','.join(m for m in ('textual', 'onnxruntime') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize("module", ["gero_tui.app.app", "gero.query.table",
                                    "gero_runner.backends", "gero.api"])
@pytest.mark.slow
def test_the_explorers_first_frame_loads_no_numpy_or_runtime(module: str) -> None:
    """Path names come from backends.names: the explorer's modules load neither NumPy
    (~0.1-0.4 s) nor a backend's module before its first frame, and neither does gero.api,
    through which it lists and opens runs."""
    heavy = ("numpy", "pyarrow", "onnx", "onnxruntime", "gero_runner.backends.base",
             "gero_runner.backends.ort")
    code = (f"import sys, {module}; "
            f"print(','.join(m for m in {heavy!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""

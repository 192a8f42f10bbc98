"""The hand-written reference held to the code: every file and name the where-to-add table
(docs/how-to/extend.md) points to exists, and the environment-variable page lists exactly the
variables the code reads."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
from doc_blocks import DOCS, ROOT

EXTEND = DOCS / "how-to" / "extend.md"
ENVIRONMENT = DOCS / "reference" / "environment.md"
BASES = (ROOT, ROOT / "runner" / "gero_runner", ROOT / "src" / "gero_tui", ROOT / "src" / "gero",
         ROOT / "src")
"""Where a path of the table is read from: the table writes runner and explorer paths from
their package (``backends/names.py``, ``app/app.py``, ``query/detail.py``)."""
PACKAGES = ("", "gero_runner.", "gero_runner.cases.synthetic.", "gero_tui.", "gero_tui.app.",
            "gero.", "gero.query.")
CLASS_HOMES = ("gero_runner.case", "gero_runner.execution.context", "gero_runner.schema")
"""Modules whose classes the table names bare (``OpCase.contracts``, ``CaseContext.row``)."""


def _table() -> list[str]:
    text = EXTEND.read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(rows) >= 7, "the where-to-add table is gone"
    return rows[1:]  # not its header


def _tokens(kind: str) -> list[str]:
    found = {t for row in _table() for t in re.findall(r"`([^`]+)`", row)}
    if kind == "path":
        return sorted(t for t in found if ("/" in t or re.search(r"\.(py|tcss|toml)$", t))
                      and "NAME" not in t and " " not in t)
    return sorted(t for t in found if re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", t)
                  and not re.search(r"\.(py|tcss|toml)$", t))


@pytest.mark.parametrize("path", _tokens("path"))
def test_every_path_of_the_table_exists(path: str) -> None:
    assert any((base / path.rstrip("/")).exists() for base in BASES), (
        f"docs/how-to/extend.md names {path}, which is not in the repository")


def _has(obj: object, name: str) -> bool:
    return (hasattr(obj, name) or name in getattr(obj, "__dataclass_fields__", {})
            or name in getattr(obj, "__annotations__", {}))


def _resolves(token: str) -> bool:
    parts = token.split(".")
    for package in PACKAGES:
        for cut in range(len(parts) - 1, 0, -1):
            try:
                obj: object = importlib.import_module(package + ".".join(parts[:cut]))
            except ImportError:
                continue
            for i, part in enumerate(parts[cut:]):
                if not _has(obj, part):
                    break
                if i < len(parts[cut:]) - 1:
                    obj = getattr(obj, part)
            else:
                return True
    return any(_has(importlib.import_module(home), parts[0])
               and _has(getattr(importlib.import_module(home), parts[0]), parts[1])
               for home in CLASS_HOMES if len(parts) == 2)


@pytest.mark.parametrize("name", _tokens("name"))
def test_every_name_of_the_table_exists(name: str) -> None:
    assert _resolves(name), f"docs/how-to/extend.md names {name}, which the code does not have"


def test_the_table_checks_what_it_should() -> None:
    assert {"backends/names.py", "checks/contracts/operator_laws.py"} <= set(_tokens("path"))
    assert {"gero_cli.COMMANDS", "backends.RUNTIMES"} <= set(_tokens("name"))
    assert not _resolves("backends.NO_SUCH_NAME")


_READ = re.compile(
    r"""(?:environ\.get\(|environ\[|getenv\(|_ENV\s*=\s*)["']([A-Z][A-Z0-9_]*)["']""")


def _read_by_the_code() -> set[str]:
    names: set[str] = set()
    for folder in (ROOT / "runner", ROOT / "src"):
        for source in folder.rglob("*.py"):
            names |= set(_READ.findall(source.read_text(encoding="utf-8")))
    return names


def test_every_environment_variable_is_documented_and_no_other() -> None:
    documented = set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", ENVIRONMENT.read_text(
        encoding="utf-8"), re.MULTILINE))
    read = _read_by_the_code()
    assert {"GERO_DATA_DIR", "GERO_DASK_SCHEDULER", "NO_COLOR"} <= read  # the scan works
    assert read == documented, (f"read but not documented: {sorted(read - documented)}; "
                                f"documented but not read: {sorted(documented - read)}")


def test_a_page_path_is_a_path(tmp_path: Path) -> None:
    """The path check can fail."""
    assert not any((base / "no/such/file.py").exists() for base in BASES)

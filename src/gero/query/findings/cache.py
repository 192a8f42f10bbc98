"""The findings of a run kept on disk under the data root: the members table as Parquet
and the listing as JSON, keyed by the grouping and titling rules and the run's files."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

import duckdb

from gero.query.findings.members import build_members, members_sql
from gero.query.findings.model import MEMBERS_TABLE, Finding, Queryable, Representative
from gero_runner.storage.layout import FINDINGS_CACHE_DIR

CACHE_DIR = FINDINGS_CACHE_DIR
"""Under the data root: each run's findings, computed once (a run's files do not change once
it is complete; a run still writing has new file sizes, so a new key). ``gero gc`` removes
the folders of runs that are gone."""


def _rules_text() -> bytes:
    """This package's modules, in a fixed order: their Python words the titles."""
    package = Path(__file__).parent
    return b"".join(p.read_bytes() for p in sorted(package.rglob("*.py")))


ALGORITHM = hashlib.sha256(members_sql().encode() + _rules_text()).hexdigest()[:12]
"""The grouping and titling rules' version (the SQL and this package's text): a cache
written by other rules is not read."""


def cache_files(source: Queryable) -> tuple[Path, Path] | None:
    """(members Parquet, findings JSON) of this run under these rules, or None when the
    source is not a stored run (a test's relation, a file gone)."""
    root, run_id = getattr(source, "data_root", None), getattr(source, "run_id", None)
    files = [*getattr(source, "files", ()), getattr(source, "sightings", None)]
    if root is None or not run_id or not files[0]:
        return None
    digest = hashlib.sha256(ALGORITHM.encode())
    try:
        for f in files:
            if f is not None:
                st = Path(f).stat()
                digest.update(f"{f}:{st.st_size}:{st.st_mtime_ns};".encode())
    except OSError:
        return None
    base = Path(root).joinpath(*CACHE_DIR, str(run_id), digest.hexdigest()[:16])
    return base.with_suffix(".parquet"), base.with_suffix(".json")


def _from_json(data: dict[str, Any]) -> Finding:
    rep = Representative(**data.pop("representative"))
    for key in ("operators", "dtypes", "levels"):
        data[key] = tuple(data[key])
    return Finding(**data, representative=rep)


def read_listing(files: tuple[Path, Path]) -> list[Finding] | None:
    """The kept findings, or None when there are none or they cannot be read."""
    members, listing = files
    if not members.is_file():
        return None
    try:
        return [_from_json(f) for f in json.loads(listing.read_text())]
    except (OSError, ValueError, TypeError, KeyError):
        return None  # absent, or unreadable: compute again


def read_members(source: Queryable, files: tuple[Path, Path]) -> bool:
    """Load the kept members table into the source's database; False when it cannot."""
    try:
        build_members(source, cached=files[0])
    except (OSError, duckdb.Error):
        return False
    return True


def write_cache(source: Queryable, files: tuple[Path, Path], findings: list[Finding]) -> None:
    """Best effort: a read-only data root, a full disk or a race leave no cache, no error."""
    members, listing = files
    try:
        members.parent.mkdir(parents=True, exist_ok=True)
        for old in members.parent.iterdir():  # earlier keys of this run: stale
            if old.stem != members.stem:
                old.unlink(missing_ok=True)
        staged = members.with_name(f".{members.name}.{threading.get_ident()}.tmp")
        source.query(f"COPY {MEMBERS_TABLE} TO '{str(staged).replace(chr(39), chr(39) * 2)}' "
                     "(FORMAT parquet)")
        staged.replace(members)
        text = json.dumps([f.as_dict() for f in findings], default=str)
        staged_json = listing.with_name(f".{listing.name}.{threading.get_ident()}.tmp")
        staged_json.write_text(text)
        staged_json.replace(listing)
    except (OSError, duckdb.Error):
        return

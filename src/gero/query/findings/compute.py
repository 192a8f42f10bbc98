"""Computing a run's findings once: group, read back, keep; later callers read what was
kept."""

from __future__ import annotations

import threading

from gero.query.findings.cache import cache_files, read_listing, read_members, write_cache
from gero.query.findings.members import build_members, has_members
from gero.query.findings.model import Finding, Queryable
from gero.query.findings.read import read_findings

_BUILDING = threading.Lock()
"""Two screens (or a screen and the table's sort) may ask at once: one writes the tables."""


def compute_findings(source: Queryable) -> list[Finding]:
    """Group the run's non-passed observations into findings (worst first), once per run:
    the result is kept under the data root and read back by the next caller. A list read
    back leaves the members table to ``ensure_members`` (a filter or sort that needs it)."""
    with _BUILDING:
        files = cache_files(source)
        if files is not None:
            cached = read_listing(files)
            if cached is not None:
                return cached
        build_members(source)
        findings = read_findings(source)
        if files is not None:
            write_cache(source, files, findings)
        return findings


def ensure_members(source: Queryable) -> None:
    """The members and order tables in the source's database: read back when kept,
    computed (and kept) otherwise."""
    if has_members(source):
        return
    with _BUILDING:
        files = cache_files(source)
        if files is not None and files[0].is_file() and read_members(source, files):
            return
    compute_findings_fresh(source)


def compute_findings_fresh(source: Queryable) -> list[Finding]:
    """Group again, whatever was kept (and keep the result)."""
    with _BUILDING:
        build_members(source)
        findings = read_findings(source)
        files = cache_files(source)
        if files is not None:
            write_cache(source, files, findings)
        return findings

"""The runs of a data root and what each was (date, versions, counts), read from ``run.json``.

Only the standard library: the explorer lists runs before it paints, and pyarrow (the
runner's store module) costs about 0.2 s to import.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gero_runner.errors import StoreError
from gero_runner.storage.layout import RUN_FILE, RUNS_DIR, run_ids
from gero_runner.storage.locks import effective_status


@dataclass(frozen=True)
class RunInfo:
    """One run as a listing shows it (the run picker, ``Results.runs()``)."""

    run_id: str
    started_at: str
    status: str
    """complete | interrupted | unreadable"""
    suite: str
    onnxruntime_version: str
    onnx_version: str
    observation_count: int
    new_observation_count: int
    counts: dict[str, int] = field(default_factory=dict)
    problem: str | None = None
    """Why the record could not be read, when it could not."""
    runtimes: dict[str, str] = field(default_factory=dict)
    """Runtimes under test and their versions (runs before runtimes were selectable: none)."""
    command_line: str = ""
    """The command that made the run, as recorded."""
    tolerance_overrides: str = ""
    """Tolerances that differ from the defaults ("float16 rtol=0.01"); empty: the defaults."""

    @property
    def date(self) -> str:
        """``YYYY-MM-DD HH:MM`` of the start (UTC), or the id's date when unknown."""
        if len(self.started_at) >= 16:
            return self.started_at[:10] + " " + self.started_at[11:16]
        return self.run_id[:8]


def resolve_run(data_root: str | os.PathLike[str], prefix: str | None,
                runs: list[str] | None = None) -> str:
    """The newest run, the run named ``prefix`` exactly, or the one run whose id starts
    with it (like git); of ``runs`` when the caller listed them."""
    data_root = Path(data_root)
    runs = run_ids(data_root) if runs is None else runs
    if not runs:
        raise StoreError(
            f"no runs in {data_root}: create one with `gero run --data-dir {data_root}`"
        )
    if not prefix:
        return runs[-1]
    if prefix in runs:  # a whole id wins: `baseline` beside `baseline-2` is not ambiguous
        return prefix
    matches = [r for r in runs if r.startswith(prefix)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise StoreError(f"no run matches {prefix!r}; runs: {', '.join(runs[-10:])}")
    raise StoreError(f"run prefix {prefix!r} is ambiguous: {', '.join(matches)}")


def read_record(data_root: str | os.PathLike[str], run_id: str) -> dict[str, Any]:
    """A run's ``run.json`` as a dict with every field of a record (blank where the file is
    not a gero record: ``record_problems`` says why); a StoreError when it cannot be read."""
    path = Path(data_root) / RUNS_DIR / run_id / RUN_FILE
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise StoreError(f"{path}: cannot read run record ({e})") from e
    if not isinstance(record, dict):
        record = {}
    sanitize_record(record, run_id)
    # A run that says it is running while no process holds its lock was killed.
    record["status"] = effective_status(path.parent, str(record["status"]))
    return record


_RECORD_FIELDS: dict[str, tuple[type, ...]] = {
    "run_id": (str,), "started_at": (str,), "finished_at": (str,), "status": (str,),
    "suite": (str,), "command_line": (str,), "seed": (int,), "jobs": (int,),
    "threads": (int,), "cpu_model": (str,), "python_version": (str,),
    "numpy_version": (str,), "onnx_version": (str,), "onnxruntime_version": (str,),
    "tolerances": (dict,), "case_count": (int,), "observation_count": (int,),
    "new_observation_count": (int,), "counts": (dict,), "wall_seconds": (int, float),
    "backend_seconds": (int, float), "evidence_seconds": (int, float),
    "store_seconds": (int, float), "case_seconds": (int, float), "models": (list,),
    "backends": (dict,), "gero_version": (str,),
}
"""The run record's fields (``schema.RunRecord``, restated without pyarrow) and their types."""
_DEFAULTS: dict[type, Any] = {str: "?", int: 0, float: 0.0, dict: {}, list: []}


def sanitize_record(record: dict[str, Any], run_id: str) -> list[str]:
    """Replace missing or mistyped fields with neutral values (in place); name them."""
    bad = []
    for name, kinds in _RECORD_FIELDS.items():
        value = record.get(name)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            if name in record:
                bad.append(name)
            record[name] = type(_DEFAULTS[kinds[0]])(_DEFAULTS[kinds[0]])
    record["run_id"] = run_id
    counts = record["counts"]
    record["counts"] = {str(k): v if isinstance(v, int) else 0 for k, v in counts.items()}
    return bad


def record_problems(data_root: str | os.PathLike[str], run_id: str) -> list[str]:
    """What is wrong with a run's ``run.json`` (empty when nothing), for a reader to show."""
    path = Path(data_root) / RUNS_DIR / run_id / RUN_FILE
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        return [f"{path}: unreadable run record, shown without it ({e})"]
    if not isinstance(record, dict):
        return [f"{path}: not a JSON object, shown without it"]
    missing = [name for name in ("run_id", "started_at", "suite") if name not in record]
    bad = sanitize_record(record, run_id)
    out = []
    if missing:
        out.append(f"{path}: not a gero run record (no {', '.join(missing)}); shown with "
                   "blank fields")
    if bad:
        out.append(f"{path}: wrong type for {', '.join(bad)}; shown as blank")
    return out


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def read_info(data_root: str | os.PathLike[str], run_id: str) -> RunInfo:
    """A run's record; an unreadable one comes back with ``problem`` set, never raises."""
    try:
        record = read_record(data_root, run_id)
    except StoreError as e:
        return RunInfo(run_id, "", "unreadable", "?", "?", "?", 0, 0, {}, problem=str(e))
    counts = record.get("counts")
    return RunInfo(
        run_id=run_id,
        started_at=str(record.get("started_at", "")),
        status=str(record.get("status", "?")),
        suite=str(record.get("suite", "?")),
        onnxruntime_version=str(record.get("onnxruntime_version", "?")),
        onnx_version=str(record.get("onnx_version", "?")),
        observation_count=_int(record.get("observation_count")),
        new_observation_count=_int(record.get("new_observation_count")),
        counts={str(k): _int(v) for k, v in counts.items()} if isinstance(counts, dict) else {},
        runtimes={str(k): str(v) for k, v in record.get("backends", {}).items()
                  if k != "onnx-reference"} if isinstance(record.get("backends"), dict) else {},
        command_line=str(record.get("command_line") or ""),
        tolerance_overrides=_overrides(record.get("tolerances")),
    )


def _overrides(tolerances: Any) -> str:
    """The recorded tolerances that are not the defaults, in a few words."""
    from gero_runner.tolerances import DEFAULT_TOLERANCES

    if not isinstance(tolerances, dict):
        return ""
    out = []
    for dtype, figures in sorted(tolerances.items()):
        if not isinstance(figures, dict):
            continue
        rtol, atol = DEFAULT_TOLERANCES.get(str(dtype), (None, None))
        changed = [f"{name}={value:g}" for name, value, default in
                   (("rtol", figures.get("rtol"), rtol), ("atol", figures.get("atol"), atol))
                   if isinstance(value, int | float) and value != default]
        if changed:
            out.append(f"{dtype} {' '.join(changed)}")
    return "; ".join(out)


def list_runs(data_root: str | os.PathLike[str]) -> list[RunInfo]:
    """Every run, newest first (the order the picker shows)."""
    return [read_info(data_root, r) for r in reversed(run_ids(Path(data_root)))]

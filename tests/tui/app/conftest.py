"""A deterministic data root for the explorer's tests: fixed rows, ids, dates and timings;
and what the pilot tests share: a real run in a fresh process, waiting on workers, the text
a Static shows."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gero_runner.schema import OBSERVATION_SCHEMA, SIGHTING_SCHEMA
from gero_runner.storage.store import rows_to_table

RUN_ID = "20260101-120000-abcdef"
OLD_RUN_ID = "20251231-090000-012345"
OPS = ("Abs", "Erf", "Exp", "Softmax")
LEVELS = ("disable_all", "basic", "extended", "all", "-")
DTYPES = ("float16", "float32")


def _result(op: str, level: str, dtype: str) -> tuple[str, str, float]:
    """A fixed pattern with every class present: Erf fails on ORT, Softmax diverges in fp16."""
    if op == "Erf" and level != "-" and dtype == "float16":
        return "execution", f"ort-{level} failed: NOT_IMPLEMENTED Erf(13)", float("nan")
    if op == "Softmax" and level in ("extended", "all") and dtype == "float16":
        return "divergence", "3 of 64 elements outside atol=5e-4 + rtol=5e-3·|r|", 2.5e-3
    if op == "Exp" and level == "-" and dtype == "float32":
        return "contract_issue", "contract:row_sum violated: 50% of rows off", 1.0e-2
    scale = (1 + OPS.index(op)) * (1 + LEVELS.index(level))
    return "passed", "within atol + rtol·|r|", 1e-7 * scale


def fixture_rows(run_id: str = RUN_ID) -> list[dict[str, Any]]:
    rows = []
    for op in OPS:
        for dtype in DTYPES:
            for shape in ("[4,16]", "[3,5,7]"):
                for level in LEVELS:
                    result, reason, err = _result(op, level, dtype)
                    key = f"{op}/{dtype}/{shape}/{level}"
                    rows.append({
                        "observation_id": hashlib.sha256(key.encode()).hexdigest(),
                        "run_id": run_id,
                        "suite": "onnx-backend" if op == "Softmax" else "synthetic",
                        "case_id": f"synthetic/{op}/{shape}/{dtype}",
                        "op_type": op,
                        "case_name": f"{op} {shape.strip('[]').replace(',', 'x')}",
                        "check": "analytic" if level == "-" else "agreement",
                        "dtype": dtype,
                        "input_shapes": shape,
                        "output_name": "y",
                        "backend": "onnx-reference" if level == "-" else "onnxruntime",
                        "backend_version": "1.0",
                        "optimization": level,
                        "threads": 1,
                        "reference": "numpy-float64" if level == "-" else "onnx-reference",
                        "reference_version": "1.0",
                        "rtol": 1e-5, "atol": 1e-6,
                        "max_abs_error": err,
                        "result": result,
                        "reason": reason,
                        # ORT is the wrong side at `extended`, the reference at `all`.
                        "arbiter": ({"extended": "actual", "all": "reference"}[level]
                                    if result == "divergence" else "-"),
                        "actual_median_ms": 0.01 * (1 + OPS.index(op)),
                        "reference_median_ms": 0.1 * (1 + OPS.index(op)),
                        "repeats": 5,
                        "seed": 0,
                    })
    return rows


def write_run(root: Path, run_id: str, rows: list[dict[str, Any]],
              sighted: list[dict[str, Any]] | None = None) -> None:
    directory = root / "runs" / run_id
    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(rows_to_table(rows), directory / "observations.parquet")
    sightings = [{"run_id": run_id, "observation_id": r["observation_id"],
                  "actual_median_ms": r["actual_median_ms"],
                  "reference_median_ms": r["reference_median_ms"], "seen_at": None}
                 for r in (rows if sighted is None else sighted)]
    pq.write_table(pa.Table.from_pylist(sightings, schema=SIGHTING_SCHEMA),
                   directory / "sightings.parquet")
    counts: dict[str, int] = {}
    for r in rows if sighted is None else sighted:
        counts[r["result"]] = counts.get(r["result"], 0) + 1
    record = {"run_id": run_id, "started_at": f"{run_id[:4]}-{run_id[4:6]}-{run_id[6:8]}T"
              f"{run_id[9:11]}:{run_id[11:13]}:00+00:00", "status": "complete",
              "suite": "synthetic", "onnxruntime_version": "1.32.0", "onnx_version": "1.23.2",
              "observation_count": len(rows if sighted is None else sighted),
              "new_observation_count": len(rows), "counts": counts}
    (directory / "run.json").write_text(json.dumps(record))


@pytest.fixture(scope="session")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs: an older small one, and the newest with every result class."""
    root = tmp_path_factory.mktemp("explorer-data")
    old = fixture_rows(OLD_RUN_ID)[:10]
    write_run(root, OLD_RUN_ID, old)
    write_run(root, RUN_ID, fixture_rows())
    assert OBSERVATION_SCHEMA.names[0] == "observation_id"
    return root


@pytest.fixture(scope="session")
def observations(data_root: Path) -> Path:
    return data_root / "runs" / RUN_ID / "observations.parquet"


def gero_run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``gero run --data-dir ROOT --jobs 1 ARGS`` in a fresh process: forking workers from
    one that has run Textual apps is not safe."""
    return subprocess.run([sys.executable, "-m", "gero_cli", "run", "--data-dir", str(root),
                           "--jobs", "1", *args], capture_output=True, text=True)


def static_text(app: Any, selector: str, width: int = 300) -> str:
    """What a Static of the app's screen shows, as plain text."""
    from rich.console import Console
    from textual.widgets import Static

    console = Console(width=width, record=True, file=io.StringIO())
    console.print(app.screen.query_one(selector, Static).content)
    return console.export_text()


async def settle(pilot: Any, rounds: int = 20) -> None:
    """Wait until every worker is done and its messages are handled (at most ``rounds``
    waits: a replay or a localization takes more)."""
    from textual.worker import WorkerCancelled

    for _ in range(rounds):
        try:
            await pilot.app.workers.wait_for_complete()
        except WorkerCancelled:
            continue  # superseded by a newer worker of its group
        await pilot.pause()
        if not any(w.is_running for w in pilot.app.workers):
            await pilot.pause()
            return


@pytest.fixture
def settled() -> Callable[[Any], Awaitable[None]]:
    return settle


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run ``async def`` tests on a fresh event loop (no async plugin is installed)."""
    import asyncio
    import inspect

    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    asyncio.run(pyfuncitem.obj(**{n: pyfuncitem.funcargs[n] for n in names}))
    return True

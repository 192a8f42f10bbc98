"""Explorer part 2 speed: opening a detail view (row + evidence + element histogram of a
10^6-element tensor) and the per-operation histogram over about a million observations.

    .venv/bin/python bench/detail_bench.py [--million /tmp/gero-million] [--tmux]

Targets: detail ≤ 300 ms as the user sees it, per-operation histogram ≤ 100 ms. Measured:

- the query layer alone (row + evidence + analysis);
- the full screen in a headless app, from ``push_screen`` until the histogram tab is painted
  with the analysis (120×40 and 80×24);
- with --tmux, the real ``gero tui`` in a tmux pane: from the `enter` key press on the row
  until the pane shows the histogram, the counts and the worst elements (the first open,
  which also imports the detail modules, is reported apart).

With --million, the data root made by bench/make_million.py is used for the per-operation
histogram; otherwise a synthetic 1M-row Parquet file is written under /tmp. Figures are
medians over --repeats runs; on a shared machine they move with its load.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "tui" / "app"))

from gero.query.detail import fetch_observation
from gero.query.histograms import operation_histogram
from gero.query.source import open_source
from gero.query.tensors import analyse, load_evidence
from gero_runner.storage.artifacts import EvidenceWriter


def _ms(samples: list[float]) -> str:
    return f"median {statistics.median(samples) * 1e3:.1f} ms, max {max(samples) * 1e3:.1f} ms"


def million_element_root(root: Path) -> str:
    """A data root with one float32 observation of 10^6 elements (with a float64 value)."""
    import detail_data

    ids = detail_data.build(root)
    rng = np.random.default_rng(0)
    exact = rng.standard_normal((1000, 1000))
    reference = exact.astype(np.float32)
    actual = (exact + rng.standard_normal(exact.shape) * 1e-6).astype(np.float32)
    actual[3, 7] = np.nan
    w = EvidenceWriter()
    w.add_array("outputs/ort-all/output_0.npy", actual)
    w.add_array("outputs/onnx-reference/output_0.npy", reference)
    w.add_array("outputs/numpy-float64-exact/output_0.npy", exact)
    artifact = w.write(root)
    # Point the divergence row of the fixture at the big tensors.
    run = next((root / "runs").iterdir())
    table = pq.read_table(run / "observations.parquet")
    rows = table.to_pylist()
    for r in rows:
        if r["observation_id"] == ids["divergence"]:
            r.update(artifact_path=artifact, dtype="float32", rtol=1e-5, atol=1e-6,
                     input_shapes="[1000,1000]")
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), run / "observations.parquet")
    return ids["divergence"]


def bench_detail(repeats: int, use_tmux: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="gero-detail-bench-") as tmp:
        root = Path(tmp)
        oid = million_element_root(root)
        source = open_source(root)
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            obs = fetch_observation(source.cursor(), oid)
            analyse(load_evidence(root, obs.fields))
            samples.append(time.perf_counter() - start)
        print(f"detail (query layer: row + evidence + analysis, 10^6 elements): {_ms(samples)}")
        for size in ((120, 40), (80, 24)):
            screen = screen_samples(root, oid, repeats, size)
            print(f"detail (full screen, headless app, {size[0]}x{size[1]}, push to histogram "
                  f"painted): {_ms(screen)}")
        if use_tmux:
            for size in ((120, 40), (80, 24)):
                first, rest = tmux_samples(root, repeats, size)
                print(f"detail (gero tui in tmux {size[0]}x{size[1]}, enter key to histogram "
                      f"on screen): first open {first * 1e3:.0f} ms; then {_ms(rest)}")


def screen_samples(root: Path, oid: str, repeats: int, size: tuple[int, int]) -> list[float]:
    """Seconds from pushing the detail screen until its analysis is shown and painted."""
    from detail_harness import Harness

    from gero_tui.app.screens.detail import DetailScreen

    async def once() -> float:
        app = Harness(root, "op", "none")
        async with app.run_test(size=size) as pilot:
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()
            start = time.perf_counter()
            app.push_screen(DetailScreen(app.source, oid))
            while True:
                await pilot.pause(0.002)
                screen = app.screen
                if isinstance(screen, DetailScreen) and screen.analysis is not None:
                    await pilot.pause()  # the refresh that paints it
                    return time.perf_counter() - start

    return [asyncio.run(once()) for _ in range(repeats)]


TMUX_SESSION = "gero-detail-bench"


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True,
                          text=True).stdout


def _wait_pane(predicate: Callable[[str], bool], timeout: float = 30.0) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if predicate(_tmux("capture-pane", "-p", "-t", TMUX_SESSION)):
            return time.perf_counter() - start
        time.sleep(0.003)
    raise TimeoutError(_tmux("capture-pane", "-p", "-t", TMUX_SESSION))


def _detail_shown(pane: str) -> bool:
    return ("ULP distance" in pane and "outside tolerance" in pane
            and "reference" in pane and "[3, 7]" in pane)  # the NaN: the first worst element


def tmux_samples(root: Path, repeats: int, size: tuple[int, int]) -> tuple[float, list[float]]:
    """The real explorer in tmux: divergences only, `enter` on the 10^6-element row."""
    gero = Path(sys.executable).parent / "gero"
    subprocess.run(["tmux", "kill-session", "-t", TMUX_SESSION], capture_output=True)
    # PYTHONPATH passes through (tmux gives the pane its server's environment otherwise), so
    # another checkout can be timed the same way.
    env = [f"PYTHONPATH={os.environ['PYTHONPATH']}"] if os.environ.get("PYTHONPATH") else []
    _tmux("new-session", "-d", "-s", TMUX_SESSION, "-x", str(size[0]), "-y", str(size[1]),
          *(a for e in env for a in ("-e", e)),
          f"{shlex.quote(str(gero))} tui --data-dir {shlex.quote(str(root))} "
          "--screen evaluations")
    try:
        _wait_pane(lambda p: "divergence" in p and "Softmax" in p)
        _tmux("send-keys", "-t", TMUX_SESSION, "2")  # divergences only: one row
        _wait_pane(lambda p: "passed" not in p.split("Result", 1)[-1])
        time.sleep(0.5)
        times = []
        for _ in range(repeats + 1):
            start = time.perf_counter()
            _tmux("send-keys", "-t", TMUX_SESSION, "Enter")
            # Older versions opened on the fields: `h` as soon as the detail title is up, so
            # every version is timed to the same picture (harmless where it opens on it).
            _wait_pane(lambda p: "agreement:" in p)
            if not _detail_shown(_tmux("capture-pane", "-p", "-t", TMUX_SESSION)):
                _tmux("send-keys", "-t", TMUX_SESSION, "h")
            _wait_pane(_detail_shown)
            times.append(time.perf_counter() - start)
            time.sleep(0.3)
            _tmux("send-keys", "-t", TMUX_SESSION, "Escape")
            _wait_pane(lambda p: "ULP distance" not in p)
            time.sleep(0.3)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", TMUX_SESSION], capture_output=True)
    return times[0], times[1:]


def bench_op_histogram(million: Path | None, repeats: int) -> None:
    with tempfile.TemporaryDirectory(prefix="gero-op-bench-") as tmp:
        if million is not None:
            source = open_source(million)
            con = source.cursor()
            op = con.execute("SELECT op_type FROM obs GROUP BY 1 ORDER BY count(*) DESC "
                             "LIMIT 1").fetchone()[0]
            label = f"{million} ({con.execute('SELECT count(*) FROM obs').fetchone()[0]:,} rows)"
            # The detail view's first step on a large run: one row, by the table's row number
            # (what `enter` passes) and by its id alone (a scan of every id).
            picked = con.execute(
                "SELECT observation_id, rn FROM evals USING SAMPLE 5 ROWS").fetchall()
            for how, number in (("row number", True), ("id", False)):
                fetches = []
                for k in range(repeats):
                    oid, rn = picked[k % len(picked)]
                    start = time.perf_counter()
                    fetch_observation(source.cursor(), oid, rn if number else None)
                    fetches.append(time.perf_counter() - start)
                print(f"detail row fetch by {how} over {label}: {_ms(fetches)}")
        else:
            n = 1_000_000
            rng = np.random.default_rng(1)
            ops = np.array([f"Op{i}" for i in range(80)])
            errors = 10.0 ** rng.uniform(-16, 0, n)
            errors[rng.random(n) < 0.2] = 0.0
            errors[rng.random(n) < 0.02] = np.nan
            table = pa.table({
                "op_type": ops[rng.integers(0, 80, n)],
                "optimization": np.array(["disable_all", "basic", "extended", "all", "-"]
                                         )[rng.integers(0, 5, n)],
                "dtype": np.array(["float16", "float32", "float64"])[rng.integers(0, 3, n)],
                "max_abs_error": errors,
            })
            path = Path(tmp) / "obs.parquet"
            pq.write_table(table, path)
            import duckdb

            con = duckdb.connect()
            con.execute(f"CREATE VIEW obs AS SELECT * FROM read_parquet('{path}')")
            op, label = "Op7", "synthetic Parquet, 1,000,000 rows, 80 operations"
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            operation_histogram(con, op)
            samples.append(time.perf_counter() - start)
        print(f"per-operation histogram over {label}: {_ms(samples)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--million", type=Path, default=None,
                        help="data root from bench/make_million.py")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tmux", action="store_true",
                        help="also time `gero tui` in a tmux pane, from the key press")
    args = parser.parse_args()
    bench_detail(args.repeats, args.tmux)
    bench_op_histogram(args.million, args.repeats)


if __name__ == "__main__":
    main()

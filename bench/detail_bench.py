"""Explorer part 2 speed: opening a detail view (row + evidence + element histogram of a
10^6-element tensor) and the per-operation histogram over about a million observations.

    .venv/bin/python bench/detail_bench.py [--million /tmp/gero-million]

Targets: detail ≤ 300 ms (query layer and the full screen in a headless app), per-operation
histogram ≤ 100 ms. With --million, the data root made by bench/make_million.py is used;
otherwise a synthetic 1M-row Parquet file is written under /tmp.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "tui" / "app"))

from gero_runner.storage.artifacts import EvidenceWriter
from gero_tui.query.detail import fetch_observation
from gero_tui.query.histograms import operation_histogram
from gero_tui.query.source import open_source
from gero_tui.query.tensors import analyse, load_evidence


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


def bench_detail(repeats: int) -> None:
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
        print(f"detail (query layer: row + evidence + histogram, 10^6 elements): {_ms(samples)}")
        screen = screen_samples(root, oid, repeats)
        print(f"detail (full screen, headless app, 120x40): {_ms(screen)}")


def screen_samples(root: Path, oid: str, repeats: int) -> list[float]:
    from detail_harness import Harness

    from gero_tui.app.screens.detail import DetailScreen
    from gero_tui.app.widgets.tensor_view import TensorView

    async def once() -> float:
        app = Harness(root, "op", "none")
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()
            start = time.perf_counter()
            app.push_screen(DetailScreen(app.source, oid))
            while True:
                await pilot.pause(0.005)
                screen = app.screen
                if isinstance(screen, DetailScreen) and screen.analysis is not None:
                    screen.query_one(TensorView).render()  # the side-by-side paint too
                    return time.perf_counter() - start

    return [asyncio.run(once()) for _ in range(repeats)]


def bench_op_histogram(million: Path | None, repeats: int) -> None:
    with tempfile.TemporaryDirectory(prefix="gero-op-bench-") as tmp:
        if million is not None:
            source = open_source(million)
            con = source.cursor()
            op = con.execute("SELECT op_type FROM obs GROUP BY 1 ORDER BY count(*) DESC "
                             "LIMIT 1").fetchone()[0]
            label = f"{million} ({con.execute('SELECT count(*) FROM obs').fetchone()[0]:,} rows)"
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
    args = parser.parse_args()
    bench_detail(args.repeats)
    bench_op_histogram(args.million, args.repeats)


if __name__ == "__main__":
    main()

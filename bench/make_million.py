"""Build a data root of about a million observations by replicating a real run's rows.

Every copy gets a new observation id (and the new run's id); nothing else changes, so the
data has a real run's value distributions. A bench helper: write under /tmp, never commit.

    .venv/bin/gero run --data-dir /tmp/shots-data --jobs 2      # a real full run
    .venv/bin/python bench/make_million.py --from /tmp/shots-data --to /tmp/gero-million
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from gero_runner.storage.store import DataRoot, new_run_id, statistics_columns


def replicate(source: Path, target: Path, rows: int, run: str | None = None) -> Path:
    """Write ``target`` with one run holding ``rows`` copies of ``source``'s newest run."""
    src = DataRoot(source)
    runs = src.run_ids()
    if not runs:
        sys.exit(f"no runs in {source}: make one with `gero run --data-dir {source}`")
    run_id = run or runs[-1]
    table = pq.read_table(src.run_dir(run_id) / "observations.parquet")
    if table.num_rows == 0:
        sys.exit(f"run {run_id} has no observations of its own to replicate")
    copies = math.ceil(rows / table.num_rows)
    big = pa.concat_tables([table] * copies).slice(0, rows)
    new_run = new_run_id()
    originals = big.column("observation_id").to_pylist()
    ids = [hashlib.sha256(f"{oid}:{i}".encode()).hexdigest()
           for i, oid in enumerate(originals)]
    big = big.set_column(big.schema.get_field_index("observation_id"), "observation_id",
                         pa.array(ids, pa.string()))
    big = big.set_column(big.schema.get_field_index("run_id"), "run_id",
                         pa.array([new_run] * big.num_rows, pa.string()))
    if target.exists():
        shutil.rmtree(target)
    directory = DataRoot(target).run_dir(new_run)
    directory.mkdir(parents=True)
    # Row groups of 64k rows, like a runner writing a large run; no float statistics, as
    # the runner writes them (store.statistics_columns: DuckDB prunes NaN filters by them).
    pq.write_table(big, directory / "observations.parquet", compression="zstd",
                   row_group_size=65536, write_statistics=statistics_columns(big.schema))
    sightings = pa.table({
        "run_id": big.column("run_id"),
        "observation_id": big.column("observation_id"),
        "actual_median_ms": big.column("actual_median_ms"),
        "reference_median_ms": big.column("reference_median_ms"),
        "seen_at": big.column("created_at"),
    })
    pq.write_table(sightings, directory / "sightings.parquet", compression="zstd",
                   write_statistics=statistics_columns(sightings.schema))
    record = src.read_run(run_id)
    counts = {k: int(v) for k, v in zip(*pc.value_counts(big.column("result")).flatten(),
                                          strict=True)}
    record.update(run_id=new_run, observation_count=big.num_rows,
                  new_observation_count=big.num_rows,
                  counts={k.as_py() if hasattr(k, "as_py") else k: v for k, v in counts.items()},
                  command_line=f"bench/make_million.py (x{copies} of {run_id})")
    (directory / "run.json").write_text(json.dumps(record, indent=2, sort_keys=True))
    return directory


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", type=Path, default=Path("/tmp/shots-data"))
    parser.add_argument("--to", dest="target", type=Path, default=Path("/tmp/gero-million"))
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--run", default=None, help="source run id (default: newest)")
    args = parser.parse_args()
    if not str(args.target.resolve()).startswith("/tmp/"):
        sys.exit("write the bench data root under /tmp (it is not committed)")
    directory = replicate(args.source, args.target, args.rows, args.run)
    print(f"wrote {args.rows:,} observations to {directory}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

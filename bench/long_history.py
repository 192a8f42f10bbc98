"""A data root with a long history: 1,000 nightly reruns of a real run, and what it costs.

``build`` replays a real run (the newest in ``--source``, e.g. ``gero run`` of the default
suite) through the run writer ``gero run`` uses (``RunWriter``: deduplication, keys,
saves, automatic compaction), once into an empty root (``--one``) and then ``--runs``
times into another (``--long``) as nightly reruns: every observation sighted again with
its case's timings jittered, and ``--new`` observations per rerun changed (a new id and
error) so that they are stored as new. The backends are not run again: the runs are the
real run's rows, so the root is what 1,000 runs of that suite leave on disk. Artifacts
are hard links to the source's (new observations point at their case's evidence).

``measure`` times, on the one-run root and on the long root (medians of ``--repeats``):
the explorer's first paint of the evaluations table (as ``explorer_bench.py``, in tmux),
``gero summary`` and ``gero findings``; the store step of one more rerun (the writer's
``store_seconds``: its saves, under the data root's lock) on an empty root and on the long
root; and the bytes a rerun adds (runs/ and store/, the average over the reruns).

    .venv/bin/gero run --data-dir /tmp/gero-source          # once: a real default run
    .venv/bin/python bench/long_history.py build --source /tmp/gero-source
    .venv/bin/python bench/long_history.py measure
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent))
import explorer_bench

from gero_runner.schema import OBSERVATION_SCHEMA
from gero_runner.storage.index import observation_files
from gero_runner.storage.layout import RUNS_DIR
from gero_runner.storage.reader import open_run
from gero_runner.storage.run_writer import _FIXED_FIELDS, KnownIds, RunWriter
from gero_runner.storage.store import DataRoot

FIRST_NIGHT = datetime(2025, 1, 1, 2, 0, tzinfo=UTC)


class Source:
    """The real run's rows (sighted, with its timings), per case in the run's order."""

    def __init__(self, root: Path) -> None:
        with open_run(root) as run:
            self.record = run.record()
            table = run.arrow()
        self.table = table.select(OBSERVATION_SCHEMA.names).cast(OBSERVATION_SCHEMA)
        cases = self.table.column("case_id").to_numpy(zero_copy_only=False)
        order = np.argsort(cases, kind="stable")
        self.table = self.table.take(pa.array(order))
        cases = cases[order]
        starts = np.flatnonzero(np.r_[True, cases[1:] != cases[:-1]])
        self.cases = [(str(cases[s]), int(s), int(e))
                      for s, e in zip(starts, np.r_[starts[1:], len(cases)], strict=True)]

    def rerun(self, night: int, new: int) -> pa.Table:
        """The rows of the ``night``-th rerun: timings jittered per case, ``new`` changed."""
        rng = np.random.default_rng(night)
        factors = np.repeat(rng.uniform(0.8, 1.25, len(self.cases)),
                            [e - s for _, s, e in self.cases])
        table = self.table
        for name in ("actual_median_ms", "reference_median_ms"):
            i = table.schema.get_field_index(name)
            table = table.set_column(i, table.schema.field(name),
                                     pc.multiply(table.column(name), pa.array(factors)))
        if night and new:
            picked = rng.choice(table.num_rows, size=new, replace=False)
            ids = table.column("observation_id").to_pylist()
            errors = table.column("max_abs_error").to_numpy(zero_copy_only=False).copy()
            for j in picked:
                ids[j] = hashlib.sha256(f"{ids[j]}/{night}".encode()).hexdigest()
                errors[j] = errors[j] * 1.5 + 1e-7
            table = table.set_column(table.schema.get_field_index("observation_id"),
                                     table.schema.field("observation_id"), pa.array(ids))
            table = table.set_column(table.schema.get_field_index("max_abs_error"),
                                     table.schema.field("max_abs_error"), pa.array(errors))
        return table


def replay(root: Path, source: Source, night: int, new: int, saves: int,
           known: KnownIds | None = None) -> dict[str, float]:
    """One run written as ``gero run`` writes it; its store seconds and its compaction's.
    ``known``: the other runs' ids as an earlier replay read them (building only: a run
    of ``gero run`` reads them at its first save, as a measured replay does)."""
    started = FIRST_NIGHT + timedelta(days=night)
    run_id = f"{started:%Y%m%d-%H%M%S}-{night:06x}"
    fields = {k: v for k, v in source.record.items() if k in _FIXED_FIELDS}
    fields.update(run_id=run_id, started_at=started.isoformat())
    table = source.rerun(night, new).combine_chunks()
    writer = RunWriter.create(DataRoot(root), run_id, fields)
    if known is not None:
        known.own_run = run_id
        writer.known = known
    every = max(1, len(source.cases) // saves)
    for position, (case_id, start, end) in enumerate(source.cases):
        writer.add(position, case_id, table.slice(start, end - start).to_batches()[0],
                   0.0, 0.0, 0.0)
        if (position + 1) % every == 0 and position + 1 < len(source.cases):
            writer.save("running")
    before = time.perf_counter()
    record = writer.finish("complete")
    finish = time.perf_counter() - before
    return {"store_seconds": record.store_seconds, "finish_seconds": finish}


def tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def history_bytes(root: Path) -> int:
    return tree_bytes(root / RUNS_DIR) + tree_bytes(root / "store")


def build(args: argparse.Namespace) -> int:
    source = Source(args.source)
    print(f"source: {args.source}, {source.table.num_rows} observations in "
          f"{len(source.cases)} cases")
    if args.first_night == 0:
        for root in (args.one, args.long):
            if root.exists():
                shutil.rmtree(root)
            root.mkdir(parents=True)
            subprocess.run(["cp", "-al", str(args.source / "artifacts"),
                            str(root / "artifacts")], check=True)
        replay(args.one, source, 0, 0, args.saves)
    start = time.perf_counter()
    known = KnownIds(DataRoot(args.long), "")
    for night in range(args.first_night, args.runs):
        timing = replay(args.long, source, night, args.new, 1, known)
        if night % 50 == 0 or night == args.runs - 1:
            print(f"  night {night + 1}/{args.runs}: {time.perf_counter() - start:.0f} s, "
                  f"store {timing['store_seconds']:.2f} s, finish {timing['finish_seconds']:.2f}"
                  f" s, {history_bytes(args.long) / 1e6:.1f} MB", flush=True)
    one, long = history_bytes(args.one), history_bytes(args.long)
    print(f"one-run root: {one / 1e6:.2f} MB; {args.runs}-run root: {long / 1e6:.1f} MB; "
          f"per rerun: {(long - one) / max(1, args.runs - 1) / 1e3:.0f} KB "
          f"({len(observation_files(args.long))} observation files)")
    return 0


def timed(command: list[str], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(command)} failed: {done.stderr}")
    return times


def first_paints(gero: Path, root: Path, repeats: int) -> list[float]:
    command = f"{gero} tui --data-dir {root} --screen evaluations"
    paints = []
    for _ in range(repeats):
        subprocess.run(["tmux", "kill-session", "-t", explorer_bench.SESSION],
                       capture_output=True)
        time.sleep(0.5)
        start = time.perf_counter()
        explorer_bench.tmux("new-session", "-d", "-s", explorer_bench.SESSION, "-x", "120",
                            "-y", "40", command)
        explorer_bench.wait_for(lambda s: " of " in explorer_bench.status_line(s)
                                and "passed" in s.split("Details", 1)[-1], timeout=180)
        paints.append(time.perf_counter() - start)
    subprocess.run(["tmux", "kill-session", "-t", explorer_bench.SESSION], capture_output=True)
    return paints


def median(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} s (min {min(values):.3f}, max {max(values):.3f})"


def measure(args: argparse.Namespace) -> int:
    gero = Path(sys.executable).parent / "gero"
    print(f"load average: {os.getloadavg()}")
    results: dict[str, dict[str, list[float]]] = {}
    for name, root in (("one run", args.one), (f"{len(list((args.long / RUNS_DIR).iterdir()))}"
                                               " runs", args.long)):
        figures = results.setdefault(name, {})
        # Interleaved, so that a change of the machine's load hits both roots alike.
        for _ in range(args.repeats):
            figures.setdefault("first paint", []).extend(first_paints(gero, root, 1))
            figures.setdefault("gero summary", []).extend(
                timed([str(gero), "summary", "--data-dir", str(root)], 1))
            figures.setdefault("gero findings", []).extend(
                timed([str(gero), "findings", "--data-dir", str(root)], 1))
    source = Source(args.one)
    with tempfile.TemporaryDirectory() as empty:
        stores = [replay(Path(empty) / str(i), source, 0, 0, args.saves)["store_seconds"]
                  for i in range(args.repeats)]
    results["one run"]["store step (empty root)"] = stores
    before = history_bytes(args.long)
    nights = len(list((args.long / RUNS_DIR).iterdir()))
    long_stores = [replay(args.long, source, nights + i, args.new, args.saves)
                   for i in range(args.repeats)]
    name = next(n for n in results if n != "one run")
    results[name]["store step"] = [t["store_seconds"] for t in long_stores]
    results[name]["run's end (last save + compaction)"] = [t["finish_seconds"]
                                                          for t in long_stores]
    grown = (history_bytes(args.long) - before) / args.repeats
    for name, figures in results.items():
        print(name)
        for what, values in figures.items():
            print(f"  {what:38s} {median(values)}")
    ratio = {what: statistics.median(results[name][what])
             / statistics.median(results["one run"][what])
             for what in ("first paint", "gero summary", "gero findings")}
    print("ratios (long / one run): " + ", ".join(f"{k} {v:.2f}x" for k, v in ratio.items()))
    extra = statistics.median(results[name]["store step"]) - statistics.median(stores)
    print(f"store step: {extra:+.2f} s against an empty root")
    print(f"bytes added by the measured reruns: {grown / 1e3:.0f} KB each")
    print(f"load average: {os.getloadavg()}")
    json.dump(results, sys.stderr if args.json is None else args.json.open("w"), indent=1)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("--source", type=Path, required=True, help="a data root with a real run")
    b.add_argument("--runs", type=int, default=1000)
    b.add_argument("--first-night", type=int, default=0,
                   help="add nights from this one on to an existing --long root (several "
                   "builders may share a root: the writer's lock orders them)")
    b.add_argument("--new", type=int, default=60, help="new observations per rerun")
    b.add_argument("--saves", type=int, default=8, help="saves of the one-run root's run")
    m = sub.add_parser("measure")
    m.add_argument("--repeats", type=int, default=5)
    m.add_argument("--new", type=int, default=60)
    m.add_argument("--saves", type=int, default=8, help="saves of a measured run")
    m.add_argument("--json", type=Path, default=None)
    for p in (b, m):
        p.add_argument("--one", type=Path, default=Path("/tmp/gero-one-run"))
        p.add_argument("--long", type=Path, default=Path("/tmp/gero-long-history"))
    args = parser.parse_args()
    return build(args) if args.command == "build" else measure(args)


if __name__ == "__main__":
    sys.exit(main())


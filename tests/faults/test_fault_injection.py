"""Faults injected into real ``gero`` processes: nothing lost, nothing clobbered.

Two runs at once into one root, the same run id twice, kill -9 and SIGTERM of the parent
mid-run (then ``--resume``), a full small file system, a model that never ends, a hostile
bundle. Runs are
stopped at a known point with a gate file (``gated_gero.py``), and every wait is on a
predicate with a bounded timeout, so a slow machine makes them slower, not flaky.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from shared_helpers import never_ending_model, process_gone

import gero_runner
import gero_tui
from gero_runner.storage.reader import sighted_ids
from gero_runner.storage.store import DataRoot

GATED_GERO = Path(__file__).with_name("gated_gero.py")
OPS = ["--ops", "Exp,Relu", "--dtypes", "float32", "--repeats", "1", "--jobs", "2"]
FOUND = 1
"""Exit status of a complete run of OPS: its Relu cases have findings (Exp alone passes)."""
# The processes import the same gero as this test (whatever PYTHONPATH or install chose).
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(Path(gero_tui.__file__).parents[1]), str(Path(gero_runner.__file__).parents[1]),
     os.environ.get("PYTHONPATH", "")])}
WAIT_S = 60.0
"""Bound on any wait: far above what a slow two-core machine needs."""


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.05)


def gero(*args: str, cwd: Path, check: int | None = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "gero_cli", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=WAIT_S, env=ENV)
    if check is not None:
        assert done.returncode == check, done.stderr
    return done


def start_gated(*args: str, cwd: Path, gate: Path, gated: str) -> subprocess.Popen[str]:
    env = {**ENV, "GERO_TEST_GATE": str(gate), "GERO_TEST_GATED": gated}
    return subprocess.Popen([sys.executable, str(GATED_GERO), *args], cwd=cwd, env=env,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def record(root: Path, run_id: str) -> dict[str, object]:
    try:
        value = json.loads((root / "runs" / run_id / "run.json").read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def runs(root: Path) -> list[str]:
    d = root / "runs"
    return sorted(p.name for p in d.iterdir() if (p / "run.json").is_file()) if d.is_dir() else []


def stored_ids(root: Path) -> list[str]:
    """Every observation id in every run's observation file (duplicates kept)."""
    ids: list[str] = []
    for path in DataRoot(root).observation_files():
        ids += pq.read_table(path, columns=["observation_id"]).column(0).to_pylist()
    return ids


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def snapshot(root: Path, run_id: str) -> dict[str, bytes]:
    d = root / "runs" / run_id
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


@dataclass(frozen=True)
class Baseline:
    """What an undisturbed run of the cases the faults interrupt keeps."""

    ids: set[str]
    cases: list[str]
    exp_cases: int


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Baseline:
    """One undisturbed run of the cases the faults interrupt: what a run should keep."""
    root = tmp_path_factory.mktemp("baseline")
    gero("run", "--data-dir", str(root), *OPS, cwd=root, check=FOUND)
    (run_id,) = runs(root)
    cases = (root / "runs" / run_id / "cases.txt").read_text().splitlines()
    return Baseline(ids=set(stored_ids(root)), cases=cases,
                    exp_cases=sum(c.split("/")[1] == "Exp" for c in cases))


@pytest.fixture(scope="module")
def earlier_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root holding one run of other cases, ``earlier``: it must come through unchanged."""
    root = tmp_path_factory.mktemp("earlier") / "data"
    gero("run", "--data-dir", str(root), "--ops", "Sigmoid", "--dtypes", "float32",
         "--repeats", "1", "--jobs", "1", "--run-id", "earlier", cwd=root.parent)
    return root


def test_two_concurrent_runs_store_each_observation_once(tmp_path: Path,
                                                         baseline: Baseline) -> None:
    root, gate = tmp_path / "data", tmp_path / "gate"
    first, second = (start_gated("run", "--data-dir", str(root), *OPS, "--run-id", name,
                                 cwd=tmp_path, gate=gate, gated="Exp,Relu")
                     for name in ("first", "second"))
    wait_for(lambda: record(root, "first").get("status") == "running"
             and record(root, "second").get("status") == "running", "both runs to start")
    gate.touch()  # both go on at once: their saves race for the data root
    for p in (first, second):
        _, err = p.communicate(timeout=WAIT_S)
        assert p.returncode == FOUND, err
    ids = stored_ids(root)
    assert len(ids) == len(set(ids)) == len(baseline.ids)
    assert set(ids) == baseline.ids
    for run_id in ("first", "second"):
        assert sorted(sighted_ids(root, run_id)) == sorted(baseline.ids)
        assert record(root, run_id)["observation_count"] == len(baseline.ids)
    out = gero("export", "--data-dir", str(root), "--run", "second", "-o", "x.csv", cwd=tmp_path)
    assert f"wrote {len(baseline.ids)} observations" in out.stdout


def test_one_run_id_twice_is_refused_and_loses_nothing(tmp_path: Path,
                                                       baseline: Baseline) -> None:
    root, gate = tmp_path / "data", tmp_path / "gate"
    first = start_gated("run", "--data-dir", str(root), *OPS, "--run-id", "same",
                        cwd=tmp_path, gate=gate, gated="Exp,Relu")
    wait_for(lambda: record(root, "same").get("status") == "running", "the first run")
    second = start_gated("run", "--data-dir", str(root), *OPS, "--run-id", "same",
                         cwd=tmp_path, gate=gate, gated="Exp,Relu")
    _, err = second.communicate(timeout=WAIT_S)
    assert second.returncode == 2
    assert err.strip() == (f"gero: error: run 'same' already exists in {root}; choose another "
                           "--run-id")
    gate.touch()
    first.communicate(timeout=WAIT_S)
    assert first.returncode == FOUND
    assert set(stored_ids(root)) == baseline.ids
    assert record(root, "same")["case_count"] == len(baseline.cases)


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
def test_a_stopped_run_keeps_what_it_finished_and_resumes(
        tmp_path: Path, baseline: Baseline, earlier_root: Path,
        how: signal.Signals) -> None:
    root, gate = tmp_path / "data", tmp_path / "gate"
    shutil.copytree(earlier_root, root)
    before = snapshot(root, "earlier")
    run = start_gated("run", "--data-dir", str(root), *OPS, "--run-id", "stopped",
                      cwd=tmp_path, gate=gate, gated="Relu")
    exp_cases = baseline.exp_cases
    # The Exp cases finish and are saved; the Relu cases wait at the gate, never opened.
    wait_for(lambda: record(root, "stopped").get("case_count") == exp_cases,
             "the finished cases to be saved")
    workers = children(run.pid)
    assert workers, "the run has worker processes"
    os.kill(run.pid, how)
    _, err = run.communicate(timeout=WAIT_S)
    wait_for(lambda: all(process_gone(w) for w in workers),
             "the workers to exit with their parent")
    if how == signal.SIGTERM:
        assert run.returncode == 143
        assert f"gero: terminated; run stopped keeps its {exp_cases} finished cases" in err
    else:
        assert run.returncode == -signal.SIGKILL
    summary = json.loads(gero("summary", "--data-dir", str(root), "--run", "stopped",
                              "--format", "json", cwd=tmp_path).stdout)
    assert summary["run"]["status"] == "interrupted"
    assert summary["run"]["case_count"] == exp_cases
    kept = sighted_ids(root, "stopped")
    assert kept and len(kept) == len(set(kept))
    assert snapshot(root, "earlier") == before

    resumed = gero("run", "--data-dir", str(root), "--resume", "stopped", cwd=tmp_path,
                   check=FOUND)
    assert "run stopped: " in resumed.stdout
    final = record(root, "stopped")
    assert final["status"] == "complete"
    assert final["case_count"] == len(baseline.cases)
    assert set(sighted_ids(root, "stopped")) == baseline.ids
    ids = stored_ids(root)
    assert len(ids) == len(set(ids))
    assert snapshot(root, "earlier") == before
    refused = gero("run", "--data-dir", str(root), "--resume", "stopped", cwd=tmp_path, check=2)
    assert "is complete, not interrupted" in refused.stderr


def test_a_library_callers_workers_end_with_it(tmp_path: Path) -> None:
    """Workers of a fork server (any caller but the gero command) are the server's children,
    and the server lives while they do: each must watch the process it works for."""
    gate = tmp_path / "gate"
    env = {**ENV, "GERO_TEST_GATE": str(gate), "GERO_TEST_GATED": "Exp,Relu",
           "GERO_TEST_LIBRARY": "1"}
    run = subprocess.Popen([sys.executable, str(GATED_GERO), "run", "--data-dir",
                            str(tmp_path / "data"), *OPS], cwd=tmp_path, env=env, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    def servers() -> list[int]:
        """The run's children that have children: the fork server, its workers waiting
        at the gate."""
        return [p for p in children(run.pid) if children(p)]

    wait_for(lambda: bool(servers()), "the fork server and its workers")
    server = servers()
    workers = [w for s in server for w in children(s)]
    os.kill(run.pid, signal.SIGKILL)
    run.communicate(timeout=WAIT_S)
    wait_for(lambda: all(process_gone(p) for p in [*workers, *server]),
             "the workers and the fork server to exit with the run")


def _small_filesystem(path: Path, size_kib: int) -> bool:
    """Mount a tmpfs of ``size_kib`` at ``path`` (root on Linux only)."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0 or not shutil.which("mount"):
        return False
    path.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs",
                           str(path)], capture_output=True)
    return done.returncode == 0


def test_a_full_disk_is_one_sentence_and_keeps_a_readable_run(
        tmp_path: Path, baseline: Baseline) -> None:
    root = tmp_path / "small"
    if not _small_filesystem(root, 160):
        pytest.skip("needs root on Linux to mount a small tmpfs")
    try:
        done = gero("run", "--data-dir", str(root), *OPS, "--run-id", "full", cwd=tmp_path,
                    check=1)
        assert "Traceback" not in done.stderr
        (line,) = done.stderr.strip().splitlines()
        assert line.startswith("gero: error: the disk is full")
        assert "gero run --resume full" in line
        summary = json.loads(gero("summary", "--data-dir", str(root), "--format", "json",
                                  cwd=tmp_path, check=None).stdout)
        assert summary["run"]["status"] == "interrupted"
        kept = sighted_ids(root, "full") if (root / "runs/full/sightings.parquet").exists() \
            else []
        cases = (root / "runs/full/cases.txt").read_text().splitlines() \
            if (root / "runs/full/cases.txt").exists() else []
        assert summary["run"]["case_count"] == len(cases) < len(baseline.cases)
        assert len(kept) == len(set(kept)) and set(kept) <= baseline.ids
    finally:
        subprocess.run(["umount", "-l", str(root)], capture_output=True)


def test_a_model_that_never_ends_is_bounded_by_the_path_budget(tmp_path: Path) -> None:
    model = tmp_path / "hang.onnx"
    model.write_bytes(never_ending_model())
    root = tmp_path / "data"
    start = time.monotonic()
    gero("run", "--data-dir", str(root), "--model", str(model), "--path-budget", "1",
         "--backends", "onnxruntime", "--jobs", "1", "--run-id", "hang", cwd=tmp_path,
         check=FOUND)
    assert time.monotonic() - start < WAIT_S
    rows = pq.read_table(root / "runs/hang/observations.parquet").to_pylist()
    # Each path (each ORT level, the ReferenceEvaluator) ran out of its own budget, and its
    # row says so; so did gero's float64 shadow, whose row is a note (gero's own tooling).
    assert {r["result"] for r in rows if r["check"] != "model:float64-shadow"} == {"execution"}
    reasons = {r["optimization"]: r["reason"] for r in rows if r["check"] == "agreement"}
    assert reasons["all"] == ("ort-all failed: onnxruntime all ran out of its 1 s budget on "
                              "the model; not run on the contract graphs, nor its "
                              "noise-floor runs")
    assert len(reasons) == 5  # the four levels and the ReferenceEvaluator ("-")
    shadow = [(r["result"], r["note"]) for r in rows if r["check"] == "model:float64-shadow"]
    assert shadow == [("passed", "the float64 shadow could not run: it ran out of its 1 s "
                                 "budget (--path-budget)")]


def test_a_hostile_bundle_is_refused_or_bounded(tmp_path: Path) -> None:
    root = tmp_path / "data"
    gero("run", "--data-dir", str(root), "--ops", "Exp", "--dtypes", "float32", "--limit", "1",
         "--repeats", "1", "--jobs", "1", "--no-contracts", "--run-id", "b", cwd=tmp_path)
    oid = pq.read_table(root / "runs/b/observations.parquet").column("observation_id")[0]
    gero("bundle", oid.as_py()[:12], "--data-dir", str(root), "-o", "good.tar.gz", cwd=tmp_path)
    with tarfile.open(tmp_path / "good.tar.gz") as tar:
        tar.extractall(tmp_path / "x", filter="data")
    (case,) = (tmp_path / "x").iterdir()

    def pack(name: str) -> str:
        manifest = json.loads((case / "manifest.json").read_text())
        manifest["files"] = {p.relative_to(case).as_posix():
                             hashlib.sha256(p.read_bytes()).hexdigest()
                             for p in sorted(case.rglob("*"))
                             if p.is_file() and p.name != "manifest.json"}
        (case / "manifest.json").write_text(json.dumps(manifest))
        with tarfile.open(tmp_path / name, "w:gz") as tar:
            tar.add(case, arcname=case.name)
        return name

    # A re-signed bundle whose model never ends: the replay stops at its timeout.
    (case / "model.onnx").write_bytes(never_ending_model())
    start = time.monotonic()
    done = gero("replay", pack("hang.tar.gz"), "--timeout", "1", cwd=tmp_path, check=1)
    assert time.monotonic() - start < WAIT_S
    assert "timed out after 1 s" in done.stderr and "Traceback" not in done.stderr
    # An empty manifest proves nothing: refused, exit 2.
    (case / "manifest.json").write_text(json.dumps({"algorithm": "sha256", "files": {}}))
    with tarfile.open(tmp_path / "empty.tar.gz", "w:gz") as tar:
        tar.add(case, arcname=case.name)
    done = gero("replay", "empty.tar.gz", cwd=tmp_path, check=2)
    assert "lists no files" in done.stderr


def test_a_bundle_of_many_members_or_a_long_name_is_refused_fast(tmp_path: Path) -> None:
    many = tmp_path / "many.tar.gz"
    with tarfile.open(many, "w:gz") as tar:
        for i in range(20_000):
            tar.addfile(tarfile.TarInfo(f"case/f{i}"))
    start = time.monotonic()
    done = gero("replay", str(many), cwd=tmp_path, check=2)
    assert time.monotonic() - start < 20.0
    assert "more than 10,000 members" in done.stderr and "Traceback" not in done.stderr
    long = tmp_path / "long.tar.gz"
    with tarfile.open(long, "w:gz") as tar:
        tar.addfile(tarfile.TarInfo("../" + "x" * 10_000))
    done = gero("replay", str(long), cwd=tmp_path, check=2)
    (line,) = done.stderr.strip().splitlines()
    assert "path escapes" in line and len(line) < 600

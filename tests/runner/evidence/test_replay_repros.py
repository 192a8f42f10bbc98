"""``gero replay`` under real processes (issue 45 items 12 and 13): a fresh ``localize -o``
repro reproduces, a model case's evidence reports the rows replay does not re-run as such
(not as failures), and ``--observation`` takes the short ids gero prints."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from localize_models import one_pass_variance

import gero_runner
import gero_tui

pytestmark = pytest.mark.slow

GERO = [str(Path(sys.executable).with_name("gero"))] \
    if Path(sys.executable).with_name("gero").is_file() else [sys.executable, "-m", "gero_cli"]
"""The ``gero`` command of the interpreter running the tests (the .venv's)."""
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(Path(gero_tui.__file__).parents[1]), str(Path(gero_runner.__file__).parents[1]),
     os.environ.get("PYTHONPATH", "")])}


def gero(*args: str, cwd: Path, check: int | None = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*GERO, *args], cwd=cwd, text=True, capture_output=True,
                          timeout=300, env=ENV)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    if check is not None:
        assert done.returncode == check, (done.stdout[-3000:], done.stderr[-3000:])
    return done


Run = tuple[Path, list[dict[str, Any]]]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """A one-pass-variance LayerNorm whose first three rows cancel (x near 30,000 ± 10) and
    whose last spreads ± 2,000: the variance the Sub makes has one large element, so the
    run compares it on that scale (a model output's rtol term at max|r|)."""
    tmp = tmp_path_factory.mktemp("mixed")
    model = one_pass_variance(tmp / "lnv.onnx")
    rng = np.random.default_rng(0)
    x = np.empty((4, 64), np.float32)
    x[:3] = 30000 + rng.uniform(-10, 10, (3, 64))
    x[3] = 30000 + rng.uniform(-2000, 2000, 64)
    np.savez(tmp / "x.npz", X=x)
    root = tmp / "data"
    gero("run", "--model", str(model), "--inputs", str(tmp / "x.npz"), "--data-dir",
         str(root), "--backends", "onnxruntime", "--repeats", "1", "--jobs", "2", cwd=tmp,
         check=1)
    gero("export", "--data-dir", str(root), "-o", str(tmp / "rows.json"), cwd=tmp)
    return root, json.loads((tmp / "rows.json").read_text())


def _row(rows: list[dict[str, Any]], **where: str) -> dict[str, Any]:
    found = [r for r in rows if all(r[k] == v for k, v in where.items())]
    assert found, where
    return found[0]


def test_a_fresh_localize_repro_reproduces(mixed: Run, tmp_path: Path) -> None:
    root, rows = mixed
    row = _row(rows, check="model:fp32", optimization="disable_all")
    gero("localize", row["observation_id"][:12], "--data-dir", str(root), "-o",
         str(tmp_path / "repro"), cwd=tmp_path)
    info = json.loads((tmp_path / "repro" / "localize.json").read_text())
    assert info["origin"] == "LayerNorm_0/Sub"
    done = gero("replay", str(tmp_path / "repro"), cwd=tmp_path)
    assert "RESULT CHANGED" not in done.stdout, done.stdout
    assert done.stdout.splitlines()[-1].startswith("reproduced: 12 reproduced bit-exact; "
                                                   "0 result class change(s)"), done.stdout
    data = json.loads(gero("replay", str(tmp_path / "repro"), "--format", "json",
                           cwd=tmp_path).stdout)
    assert data["reproduced"] is True and data["counts"]["result_changed"] == 0
    # The rows the run judged at the output's scale: one passed only on that scale.
    assert {o["stored_result"] for o in data["observations"]} >= {"passed"}


def test_a_model_case_replay_says_which_rows_it_does_not_rerun(mixed: Run,
                                                               tmp_path: Path) -> None:
    root, rows = mixed
    artifact = str(rows[0]["artifact_path"])
    model_rows = [r for r in rows if str(r["check"]).startswith("model:")]
    assert model_rows
    done = gero("replay", artifact, "--data-dir", str(root), cwd=tmp_path)
    lines = done.stdout.splitlines()
    assert "RESULT CHANGED" not in done.stdout, done.stdout
    for r in model_rows:
        line = next(x for x in lines if x.strip().startswith(r["observation_id"][:12]))
        assert f"not replayed; stored result ({r['result']})" in line, line
    assert "replay does not judge again" in done.stdout
    assert lines[-1].startswith("reproduced: ") and \
        f"{len(model_rows)} not replayed; 0 result class change(s)" in lines[-1], lines[-1]
    data = json.loads(gero("replay", artifact, "--data-dir", str(root), "--format", "json",
                           cwd=tmp_path).stdout)
    assert data["reproduced"] is True
    assert data["counts"]["not_replayed"] == len(model_rows)
    assert data["counts"]["result_changed"] == 0
    assert all(not o["replayed"] for o in data["observations"]
               if o["check"].startswith("model:"))


def test_observation_takes_the_short_ids_gero_prints(mixed: Run, tmp_path: Path) -> None:
    root, rows = mixed
    artifact = str(rows[0]["artifact_path"])
    agreement = _row(rows, check="agreement", optimization="all")
    short = agreement["observation_id"][:12]
    done = gero("replay", artifact, "--data-dir", str(root), "--observation", short,
                cwd=tmp_path)
    assert "1 observations" in done.stdout.splitlines()[0], done.stdout
    assert done.stdout.splitlines()[1].strip().startswith(short)
    assert done.stdout.splitlines()[-1].startswith("reproduced: 1 reproduced bit-exact")
    # A prefix several ids share is one sentence naming them.
    ids = sorted(str(r["observation_id"]) for r in rows)
    shared = next(a[:1] for a, b in itertools.pairwise(ids) if a[:1] == b[:1])
    done = gero("replay", artifact, "--data-dir", str(root), "--observation", shared,
                cwd=tmp_path, check=2)
    (line,) = done.stderr.strip().splitlines()
    assert f"observation {shared} is ambiguous in " in line and "give more of it" in line
    done = gero("replay", artifact, "--data-dir", str(root), "--observation", "zz",
                cwd=tmp_path, check=2)
    assert "observation zz does not belong to" in done.stderr
    # Only a model-level row asked for: nothing is re-run, and that is said (not a pass).
    model_row = _row(rows, check="model:fp32", optimization="all")
    done = gero("replay", artifact, "--data-dir", str(root), "--observation",
                model_row["observation_id"][:12], cwd=tmp_path, check=1)
    assert done.stdout.splitlines()[-1].startswith("nothing re-run: 1 not replayed")


def _repro_rows(directory: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads((directory / "observations.json").read_text())
    for r in rows:
        if isinstance(r["details"], str):
            r["details"] = json.loads(r["details"] or "{}")
    return rows


def test_a_repro_written_again_reuses_its_regions_kept_outputs(mixed: Run,
                                                               tmp_path: Path) -> None:
    """``localize -o`` runs the origin's region as a case: its paths keep their outputs in
    the localized run's data root, and the same repro written again reuses them (issue 41)."""
    shared, rows = mixed
    root = tmp_path / "data"  # a copy, its kept outputs (other tests' repros') removed
    shutil.copytree(shared, root)
    shutil.rmtree(root / "cache" / "outputs", ignore_errors=True)
    oid = _row(rows, check="model:fp32", optimization="disable_all")["observation_id"][:12]
    for name in ("first", "second"):
        gero("localize", oid, "--data-dir", str(root), "-o", str(tmp_path / name),
             cwd=tmp_path)
    first, second = _repro_rows(tmp_path / "first"), _repro_rows(tmp_path / "second")
    runtime = [r for r in second if r["backend"] == "onnxruntime"]
    assert runtime and all(r["details"].get("reused", "").startswith("cache/outputs/")
                           for r in runtime), [r["details"] for r in runtime]
    assert not any("reused" in r["details"] for r in first)
    assert [r["result"] for r in first] == [r["result"] for r in second]

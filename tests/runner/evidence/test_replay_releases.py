"""``gero replay`` of a ``releases`` row (issue 42): both releases run again, the reference
release (onnxruntime==1.20.1, in its own interpreter) as the first named, and the releases
check judges the change again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from release_envs import OLD, old_release
from shared_helpers import rows_of

from gero_runner.evidence.replay import _with_releases


def test_the_reference_release_is_named_first() -> None:
    row = SimpleNamespace(check="releases", backend="onnxruntime", reference=f"{OLD}:basic")
    agreement = SimpleNamespace(check="agreement", backend=OLD, reference="onnx-reference")
    assert _with_releases(("onnxruntime",), cast(Any, [row, agreement])) == (OLD, "onnxruntime")
    assert _with_releases(("onnxruntime",), cast(Any, [agreement])) == ("onnxruntime", OLD)


@pytest.mark.slow
def test_replay_reruns_both_releases_and_judges_again(tmp_path: Path) -> None:
    old_release()
    done = subprocess.run(
        [sys.executable, "-m", "gero_cli", "run", "--suite", "synthetic", "--ops", "Sqrt",
         "--dtypes", "float16", "--backends", f"{OLD},onnxruntime",
         "--jobs", "1", "--run-id", "rel", "--data-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr  # float16 Sqrt changed since 1.20.1
    changed = [r for r in rows_of(tmp_path, "rel")
               if r["check"] == "releases" and r["result"] == "divergence"]
    assert changed
    row = changed[0]
    replay = subprocess.run(
        [sys.executable, "-m", "gero_cli", "replay", str(tmp_path / row["artifact_path"]),
         "--observation", row["observation_id"][:12], "--format", "json"],
        capture_output=True, text=True, timeout=300)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    (observation,) = json.loads(replay.stdout)["observations"]
    assert observation["status"] == "bit_exact", observation
    assert observation["replayed_result"] == "divergence"
    # judged again by the releases check, against the re-run 1.20.1
    assert "from ONNX Runtime 1.20.1 on " in observation["message"]
    assert observation["message"].endswith("closer to float64")

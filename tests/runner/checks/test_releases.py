"""The releases check (issue 42): each setting of a release against the same setting of the
reference release, any changed bit reported with its direction from float64."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from release_envs import OLD, old_release
from shared_helpers import rows_of

from gero_runner.checks.releases import _ulps, bits_differ, direction, runtime_of


def test_direction_is_decided_at_the_changed_elements() -> None:
    truth = np.array([1.0, 2.0, 3.0])
    same = np.array([1, 2, 3], np.float32)
    closer = np.array([1, 2, 3.0001], np.float32)
    further = np.array([1, 2, 3.001], np.float32)
    assert direction(closer, further, truth) == "actual"
    assert direction(further, closer, truth) == "reference"
    assert direction(np.array([1, 2, 3.5], np.float32), np.array([1, 2, 2.5], np.float32),
                     truth) == "tie"
    assert direction(closer, same, None) == "-"


def test_ulps_count_float_steps_across_zero() -> None:
    one = np.array([1.0], np.float16)
    assert _ulps(np.nextafter(one, np.float16(2)), one) == 1
    tiny = np.array([np.float16(6e-8)])  # the smallest float16 subnormal
    assert _ulps(-tiny, tiny) == 2
    assert _ulps(np.array([1, 2]), np.array([1, 3])) == 0


def test_a_changed_sign_of_zero_is_a_change() -> None:
    """Ceil and Floor of ONNX Runtime 1.32.0 give -0.0 where 1.20.1 gave 0.0 (the default
    synthetic suite): equal values, changed bits."""
    new, old = np.array([-0.0, 1.0], np.float16), np.array([0.0, 1.0], np.float16)
    assert bits_differ(new, old).tolist() == [True, False]
    assert direction(new, old, np.array([-0.0, 1.0])) == "tie"
    assert bits_differ(np.array([1, 2]), np.array([1, 3])).tolist() == [False, True]


def test_a_release_is_of_its_runtime() -> None:
    assert runtime_of(OLD) == "onnxruntime"
    assert runtime_of("onnxruntime") == "onnxruntime"
    assert runtime_of("openvino") == "openvino"


@pytest.mark.slow
def test_float16_sqrt_became_correctly_rounded_since_1_20_1(tmp_path: Path) -> None:
    """A real run on two ONNX Runtime releases (1.20.1 in its own interpreter): every
    setting of the installed release against the same setting of 1.20.1; float16 Sqrt
    changed at every level, and the installed release is the one closer to float64."""
    old_release()
    done = subprocess.run(
        [sys.executable, "-m", "gero_cli", "run", "--suite", "synthetic", "--ops", "Sqrt",
         "--dtypes", "float16", "--backends", f"{OLD},onnxruntime", "--jobs", "1",
         "--run-id", "releases", "--data-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr  # changes found
    rows = rows_of(tmp_path, "releases")
    releases = [r for r in rows if r["check"] == "releases"]
    assert {r["optimization"] for r in releases} == {"disable_all", "basic", "extended", "all"}
    assert {(r["backend"], r["reference"]) for r in releases} == {
        ("onnxruntime", f"{OLD}:{r['optimization']}") for r in releases}
    assert {r["reference_version"] for r in releases} == {"1.20.1"}
    changed = [r for r in releases if r["result"] == "divergence"]
    assert changed and {r["arbiter"] for r in changed} == {"actual"}
    for r in changed:
        assert "from ONNX Runtime 1.20.1 on " in r["reason"]
        assert r["reason"].endswith("inside tolerance): closer to float64"), r["reason"]
        assert json.loads(r["figures"])["ulps"] == 1
    # 1.20.1's own paths are checked as any runtime's, against the ReferenceEvaluator
    assert any(r["backend"] == OLD and r["check"] == "agreement" for r in rows)
    findings = subprocess.run(
        [sys.executable, "-m", "gero_cli", "findings", "--data-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=120)
    assert ("Sqrt (float16) releases on ONNX Runtime: changed since ONNX Runtime 1.20.1, "
            "closer to float64") in findings.stdout, findings.stdout
    # the report's release matrix: operator x release, against the reference release
    page = tmp_path.parent / f"{tmp_path.name}-report.html"  # outside the data root
    subprocess.run([sys.executable, "-m", "gero_cli", "report", "--data-dir", str(tmp_path),
                    "-o", str(page)], capture_output=True, text=True, timeout=120, check=True)
    html = page.read_text()
    section = html[html.index('<section id="releases"'):]
    section = section[:section.index("</section>")]
    assert "against the same setting of ONNX Runtime 1.20.1" in section
    assert f"<th>ONNX Runtime {releases[0]['backend_version']}</th>" in section
    assert "<tr><th>Sqrt</th><td>float16</td><td><strong>closer</strong>" in section


@pytest.mark.slow
def test_gero_localize_runs_a_release_change_beyond_tolerance(tmp_path: Path) -> None:
    """1.20.1's float32 Log is off by up to 15.9 on the synthetic suite's tiny inputs,
    where 1.32.0 is not: ``gero localize`` on that releases row runs both releases again
    (1.20.1 in its interpreter) and finds the Log."""
    old_release()
    subprocess.run(
        [sys.executable, "-m", "gero_cli", "run", "--suite", "synthetic", "--ops", "Log",
         "--dtypes", "float32", "--backends", f"{OLD},onnxruntime", "--jobs", "1",
         "--run-id", "log", "--data-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    beyond = [r for r in rows_of(tmp_path, "log")
              if r["check"] == "releases" and r["mismatch_count"]]
    assert beyond and {r["arbiter"] for r in beyond} == {"actual"}
    done = subprocess.run(
        [sys.executable, "-m", "gero_cli", "localize", beyond[0]["observation_id"],
         "--data-dir", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"against {OLD}:{beyond[0]['optimization']}" in done.stdout
    assert "the error enters at Y (Log)" in done.stdout


@pytest.mark.slow
def test_the_python_api_names_releases_as_the_command_line_does(tmp_path: Path) -> None:
    old_release()
    code = ("import gero, sys; run = gero.run(suite='synthetic', ops=['Sqrt'], "
            f"dtypes=['float16'], backends=[{OLD!r}, 'onnxruntime'], data_dir=sys.argv[1], "
            "run_id='api', jobs=1); print(run.counts['divergence'])")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    changed = [r for r in rows_of(tmp_path, "api")
               if r["check"] == "releases" and r["result"] == "divergence"]
    assert int(done.stdout) == len(changed) > 0
    assert {r["reference"].partition(":")[0] for r in changed} == {OLD}

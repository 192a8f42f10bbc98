"""gero.testing.check_model: passes a sound model, fails a broken one with the findings
summary and the commands that replay and bundle each finding's worst observation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from shared_helpers import classifier

from gero.testing import check_model


@pytest.mark.slow
def test_a_sound_model_passes(tmp_path: Path) -> None:
    with check_model(classifier(tmp_path / "sound.onnx"), task="classifier",
                     data_dir=tmp_path / "data") as run:
        assert run.status == "complete"
        # Whatever is not passed blames only the ReferenceEvaluator (its fp16 path), or names
        # that ONNX Runtime's CPU kernels compute the fp16 file in float32 (a fact about the
        # runtime, issue 28); nothing blames the model's numerics.
        assert all(f.outlier == "onnx-reference"
                   or f.representative.check == "model:fp16:precision"
                   for f in run.findings()), [f.title for f in run.findings()]


@pytest.mark.slow
def test_a_broken_model_fails_with_a_readable_message(tmp_path: Path) -> None:
    model = classifier(tmp_path / "mixes_batch.onnx", mixes_batch=True)
    with pytest.raises(pytest.fail.Exception) as failure:
        check_model(model, task="classifier", data_dir=tmp_path / "data")
    message = str(failure.value)
    first = message.splitlines()[0]
    # One cause: the partition law it breaks on every path (its int8 variant passes its gate
    # on any CPU since x86 without VNNI gets 7-bit weights, see models/variants.py).
    assert first.startswith(f"gero: {model} is not numerically sound: 1 finding(s)")
    assert message.splitlines()[2].startswith("1. [contract_issue] mixes_batch (float32) "
                                              "breaks the partition law on every path")
    assert "\n   replay: gero replay " in message and " --observation " in message
    assert "\n   bundle: gero bundle " in message
    assert "allow=['" in message
    assert "Traceback" not in message


@pytest.mark.slow
def test_an_allowed_finding_does_not_fail(tmp_path: Path) -> None:
    model = classifier(tmp_path / "mixes_batch.onnx", mixes_batch=True)
    with pytest.raises(pytest.fail.Exception) as failure:
        check_model(model, task="classifier", data_dir=tmp_path / "a")
    known = re.findall(r"'([0-9a-f]{12})'", str(failure.value).split("allow=[")[1])
    assert known
    run = check_model(model, task="classifier", data_dir=tmp_path / "b", allow=known)
    assert run.non_passed > 0

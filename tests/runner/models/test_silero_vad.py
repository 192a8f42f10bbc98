"""silero-vad 6.2.3 as a user runs it: a real model whose whole network sits in the branches
of one If, its weights Constant nodes there. Its int8 variants are int8 (int8-dynamic is
quantised in the branches; int8-static, which ONNX Runtime's static quantizer cannot quantise
there, is a build row), and the ReferenceEvaluator runs the files."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import numpy as np
import pytest
from model_helpers import opts
from shared_helpers import rows_of

from gero_runner.run import RunRequest, execute


def silero_vad() -> Path:
    try:
        dist = importlib.metadata.distribution("silero-vad")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("silero-vad is not installed (pip install 'gero[torch]')")
    return Path(str(dist.locate_file("silero_vad/data/silero_vad.onnx")))


@pytest.mark.slow
def test_silero_vads_int8_variants_are_int8_and_run_everywhere(tmp_path: Path) -> None:
    # Two chunks as the package's OnnxWrapper feeds them: 64 samples of context and 512 of
    # audio at 16 kHz (a 220 Hz tone in noise, and noise alone), the state it starts from.
    t = np.arange(576) / 16000.0
    rng = np.random.default_rng(0)
    tone = 0.3 * np.sin(2 * np.pi * 220 * t) + 0.01 * rng.standard_normal(576)
    feeds = tmp_path / "chunks.npz"
    np.savez(feeds, input=np.stack([tone, 0.01 * rng.standard_normal(576)]).astype(np.float32),
             state=np.zeros((2, 2, 128), np.float32), sr=np.array(16000, np.int64))
    record = execute(RunRequest(
        models=[str(silero_vad())], data_root=tmp_path / "d", repeats=1, jobs=2, checks=(),
        backends=("onnxruntime",),
        model_options=opts(inputs_file=str(feeds), variants=["int8-dynamic", "int8-static"])))
    rows = rows_of(tmp_path / "d", record.run_id)
    vs = [r for r in rows if r["check"] == "model:int8-dynamic:vs-model"]
    assert len(vs) == 2 and not any("bit-identical" in str(r["reason"]) for r in vs)
    (static,) = [r for r in rows if r["check"] == "model:int8-static:build"]
    assert "If/Loop/Scan bodies" in str(static["reason"])
    ref = [r for r in rows if r["backend"] == "onnx-reference"
           and r["check"] == "model:int8-dynamic:cosine"]
    assert len(ref) == 2 and all(r["result"] == "passed" for r in ref), ref
    assert not [r for r in rows if r["backend"] == "onnx-reference"
                and r["result"] == "execution"]

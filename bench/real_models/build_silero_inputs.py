"""Inputs for silero_vad (silero-vad 6.2.3, silero_vad/data/silero_vad.onnx, the file
``load_silero_vad(onnx=True)`` loads).

Speech is synthesised at development time with espeak-ng (Debian's package) and resampled to
16 kHz; the package's own ``OnnxWrapper`` (utils_vad.py, unmodified, imported bare from the
unpacked wheel) streams it chunk by chunk as ``VADIterator``/``get_speech_timestamps`` do:
512 samples, 64 samples of context from the chunk before, the recurrent state carried. Eight
chunks (in speech and in the pauses) are taken with the exact input and state the wrapper fed
ONNX Runtime there and stacked into one batch: input [8, 576], state [2, 8, 128], sr 16000.
Needs torch (gero's own test venv has it). Run from /work/models.
"""
import os
import subprocess
import sys
import types
import wave

import numpy as np

ROOT = os.path.dirname(os.path.abspath(__file__))
X = os.path.join(ROOT, "x", "silero_vad-6.2.3")
TEXT = ("Engineers who ship models need to know where a runtime can be trusted. "
        "This sentence is spoken, then there is a pause. And then we speak again, slowly.")


def speech(path: str) -> np.ndarray:
    subprocess.run(["espeak-ng", "-w", path, "-s", "150", TEXT], check=True)
    with wave.open(path) as w:
        rate, raw = w.getframerate(), w.readframes(w.getnframes())
    x = np.frombuffer(raw, dtype=np.int16).astype(np.float64) / 32768.0
    t16 = np.arange(int(len(x) * 16000 / rate)) / 16000.0
    return np.interp(t16, np.arange(len(x)) / rate, x).astype(np.float32)


def main() -> None:
    import torch

    pkg = types.ModuleType("silero_vad")
    pkg.__path__ = [os.path.join(X, "silero_vad")]
    sys.modules["silero_vad"] = pkg
    from silero_vad.utils_vad import OnnxWrapper

    model = os.path.join(ROOT, "silero_vad", "model.onnx")
    audio = speech(os.path.join(ROOT, "silero_vad", "speech.wav"))
    vad = OnnxWrapper(model, force_onnx_cpu=True)
    fed, probs = [], []
    run = vad.session.run

    def spy(names, feeds):  # what the wrapper feeds ONNX Runtime, chunk by chunk
        fed.append({k: np.array(v) for k, v in feeds.items()})
        return run(names, feeds)

    vad.session.run = spy
    for start in range(0, len(audio) - 512, 512):
        probs.append(float(vad(torch.from_numpy(audio[start:start + 512]), 16000)[0, 0]))
    probs_a = np.array(probs)
    # Two chunks deep in speech, two in a pause, four near the 0.5 threshold (the speech
    # edges, where a decision can flip), after the state has warmed.
    warm = np.arange(8, len(probs_a))
    by_prob = warm[np.argsort(probs_a[warm])]
    edges = warm[np.argsort(np.abs(probs_a[warm] - 0.5))][:4]
    picks = sorted({*by_prob[:2].tolist(), *by_prob[-2:].tolist(), *edges.tolist()})
    inputs = {"input": np.concatenate([fed[i]["input"] for i in picks]).astype(np.float32),
              "state": np.concatenate([fed[i]["state"] for i in picks], axis=1)
              .astype(np.float32),
              "sr": np.array(16000, dtype=np.int64)}
    np.savez(os.path.join(ROOT, "silero_vad", "inputs.npz"), **inputs)
    print("chunks", len(probs), "picked", picks, "speech prob",
          np.round(probs_a[picks], 3).tolist())
    print({k: (v.shape, v.dtype) for k, v in inputs.items()})


if __name__ == "__main__":
    main()

"""Where a change between two releases of a runtime enters a model (issue 42): the first
node, in graph order, whose outputs differ bit for bit between them on the same inputs.

Both releases run the model once with every node's outputs as graph outputs (each through
its backend: a release's in its own interpreter). A change of rounding is no divergence
beyond a noise floor, so ``gero localize``'s tolerance-based search finds none; here any
changed bit counts, and the first node that changes one, its inputs being bit-identical on
both sides (they are the graph's inputs or earlier nodes' outputs), is where the change
enters. Its repro is that node alone with its real inputs (``model.onnx``, ``inputs.npz``)
and ``repro.py``, a script of the standard library, NumPy and ONNX Runtime that prints a
digest of the outputs: run it with each release's interpreter to see the two digests.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from gero_runner import backends
from gero_runner.errors import GeroError
from gero_runner.evidence.subgraphs import region_model


@dataclass(frozen=True)
class Entry:
    """The node where the outputs of two releases first differ."""

    node: str
    """Its name, else its first output's."""
    op_type: str
    outputs: tuple[str, ...]
    """Its outputs that changed."""
    changed: int
    """Elements changed over those outputs."""
    elements: int
    max_abs: float
    """Largest |difference| among the changed elements (0 for non-float outputs)."""
    index: int
    """Its position in the graph's node list."""

    def sentence(self, a: str, b: str) -> str:
        return (f"the change from {b} to {a} enters at {self.op_type} {self.node!r}: "
                f"{', '.join(self.outputs)} differ on {self.changed} of {self.elements} "
                f"elements (max |Δ| {self.max_abs:.3g}) from bit-identical inputs")


def _same(x: np.ndarray, y: np.ndarray) -> bool:
    return bool(x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes())


def _changed(x: np.ndarray, y: np.ndarray) -> tuple[int, float]:
    if x.shape != y.shape:
        return int(max(x.size, y.size)), float("inf")
    with np.errstate(invalid="ignore", over="ignore"):
        differ = ~((x == y) | (np.isnan(x) & np.isnan(y))) if x.dtype.kind == "f" else x != y
        if x.dtype.kind in "fc" and differ.any():
            return int(differ.sum()), float(np.abs(x[differ].astype(np.float64)
                                                   - y[differ].astype(np.float64)).max())
    return int(np.count_nonzero(differ)), 0.0


def tensors(model: onnx.ModelProto, name: str, settings: dict[str, Any],
            feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every node output of the model's top graph as backend ``name`` computes it."""
    wanted = [o for n in model.graph.node for o in n.output if o]
    return backends.get(name).intermediates(model, settings, wanted, [feeds])[0]


def first_change(model: onnx.ModelProto, feeds: dict[str, np.ndarray], a: str, b: str,
                 settings: dict[str, Any]) -> tuple[Entry | None, dict[str, np.ndarray]]:
    """The node where backend ``a``'s outputs first differ from ``b``'s (both at
    ``settings``), None when every node's outputs are bit-identical; and ``b``'s tensors
    (the node's real inputs, for its repro)."""
    got_a = tensors(model, a, settings, feeds)
    got_b = tensors(model, b, settings, feeds)
    for index, node in enumerate(model.graph.node):
        outs = [o for o in node.output if o and not _same(got_a[o], got_b[o])]
        if outs:
            counts = [_changed(got_a[o], got_b[o]) for o in outs]
            return Entry(node.name or node.output[0], node.op_type, tuple(outs),
                         sum(c for c, _ in counts), sum(got_b[o].size for o in outs),
                         max(m for _, m in counts), index), got_b
    return None, got_b


REPRO = '''"""The node where two releases of ONNX Runtime differ, alone (written by gero):
run it with each release's interpreter; the digests differ.
    PYTHON repro.py"""
import hashlib, os
import numpy as np
import onnxruntime as ort

here = os.path.dirname(os.path.abspath(__file__))
options = ort.SessionOptions()
options.intra_op_num_threads = 1
options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
session = ort.InferenceSession(os.path.join(here, "model.onnx"), options,
                               providers=["CPUExecutionProvider"])
with np.load(os.path.join(here, "inputs.npz"), allow_pickle=False) as data:
    feeds = {name: data[name] for name in data.files}
outputs = session.run(None, feeds)
digest = hashlib.sha256(b"".join(np.ascontiguousarray(o).tobytes() for o in outputs))
print("onnxruntime", ort.__version__, digest.hexdigest()[:16])
'''


def write_repro(output: Path, model: onnx.ModelProto, entry: Entry,
                tensors_b: dict[str, np.ndarray], feeds: dict[str, np.ndarray]) -> Path:
    """The entry node alone with its real inputs (bit-identical on both sides), in
    ``output``: model.onnx, inputs.npz and repro.py."""
    if output.exists() and any(output.iterdir()):
        raise GeroError(f"{output}: not empty; give a new folder for the repro")
    output.mkdir(parents=True, exist_ok=True)
    node = model.graph.node[entry.index]
    inits = {t.name for t in model.graph.initializer}
    known = {**feeds, **tensors_b}
    reads = {n: known[n] for n in node.input if n and n not in inits and n in known}
    alone = region_model(model, [entry.index], [o for o in node.output if o], reads,
                         name=f"release-change-{entry.node}",
                         typed={o: tensors_b[o] for o in node.output if o in tensors_b})
    onnx.save(alone, str(output / "model.onnx"))
    save: Any = np.savez  # numpy's stubs type its keyword arrays as flags
    save(output / "inputs.npz", **reads)
    (output / "repro.py").write_text(REPRO)
    return output


def digest(arrays: list[np.ndarray]) -> str:
    """What repro.py prints for these outputs (its first 16 hex digits)."""
    return hashlib.sha256(b"".join(np.ascontiguousarray(o).tobytes()
                                   for o in arrays)).hexdigest()[:16]

"""Size budgets: a model that would make a tensor over ``--max-tensor-mb`` is refused before
anything allocates it (or, when its size shows only at run time, not compared), and a case's
evidence stays within ``--max-evidence-mb``: the tensors past it are kept as summaries that
the rows, the case record, replay and the explorer's reader all name."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pyarrow.parquet as pq
import pytest
from onnx import TensorProto, numpy_helper
from onnx import helper as h

from gero_runner.errors import ArtifactError
from gero_runner.evidence.replay import replay_artifact
from gero_runner.request import ModelOptions
from gero_runner.run import RunRequest, execute
from gero_runner.storage.artifacts import PACKED, load_array, summary_of
from gero_runner.storage.budget import SUMMARIES
from gero_runner.storage.hashing import tensor_hash

MiB = 2**20


def _save(path: Path, nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
          outputs: list[onnx.ValueInfoProto], inits: list[onnx.TensorProto]) -> str:
    graph = h.make_graph(nodes, path.stem, inputs, outputs, inits)
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 19)], ir_version=10),
              str(path))
    return str(path)


def tiled(path: Path, rows: int, cols: int = 1000) -> str:
    """Y = tile(X [1, cols], [rows, 1]): an output of rows·cols floats from a small input."""
    return _save(path, [h.make_node("Tile", ["X", "reps"], ["Y"])],
                 [h.make_tensor_value_info("X", TensorProto.FLOAT, [1, cols])],
                 [h.make_tensor_value_info("Y", TensorProto.FLOAT, [rows, cols])],
                 [numpy_helper.from_array(np.array([rows, 1], np.int64), "reps")])


def rows_of(root: Path) -> list[dict[str, object]]:
    (path,) = (root / "runs").glob("*/observations.parquet")
    rows: list[dict[str, object]] = pq.read_table(path).to_pylist()
    return rows


def run(root: Path, model: str, **options: object) -> list[dict[str, object]]:
    # A generous timeout: a loaded machine makes these slower, not wrong.
    execute(RunRequest(data_root=root, models=[model], jobs=1, repeats=2, checks=(),
                       timeout_s=900, **options))  # type: ignore[arg-type]
    return rows_of(root)


def test_a_tensor_over_the_budget_is_refused_before_anything_runs(tmp_path: Path) -> None:
    # 40 GB: shape inference tells before the float64 shadow or a runtime allocates it.
    rows = run(tmp_path / "data", tiled(tmp_path / "huge.onnx", 100_000, 100_000))
    (row,) = rows
    assert row["result"] == "execution"
    assert row["reason"] == ("output 'Y' would have shape [100000, 100000] float32: "
                             "38,147.0 MiB, over the 1,024.0 MiB a tensor may take "
                             "(--max-tensor-mb); the case was not run")


@pytest.mark.slow
def test_an_output_whose_size_shows_at_run_time_is_not_compared(tmp_path: Path) -> None:
    # ConstantOfShape of an input's values: no inference can tell its size beforehand.
    model = _save(tmp_path / "dynamic.onnx", [h.make_node("ConstantOfShape", ["shape"], ["Y"])],
                  [h.make_tensor_value_info("shape", TensorProto.INT64, [2])],
                  [h.make_tensor_value_info("Y", TensorProto.FLOAT, ["rows", "cols"])], [])
    rows = run(tmp_path / "data", model, max_tensor_mb=1,
               model_options=ModelOptions(input_values=("shape=1000",)))
    runtime = [r for r in rows if r["backend"] == "onnxruntime"]
    assert runtime and all(r["result"] == "execution" for r in runtime)
    assert all("output 'Y' came out with shape [1000, 1000] float32: 3.8 MiB, over the 1.0 "
               "MiB a tensor may take (--max-tensor-mb); not compared" in str(r["reason"])
               for r in runtime)


@pytest.mark.slow
def test_evidence_past_the_budget_is_kept_as_summaries(tmp_path: Path) -> None:
    root = tmp_path / "data"
    rows = run(root, tiled(tmp_path / "wide.onnx", 250), max_evidence_mb=2)  # 0.95 MiB each
    assert {r["result"] for r in rows} == {"passed"}
    (artifact,) = {root / str(r["artifact_path"]) for r in rows}
    size = sum(p.stat().st_size for p in artifact.rglob("*") if p.is_file())
    # The budget holds the input and the expected output (always kept) and what fits beside.
    assert size < 2 * MiB + 64 * 1024  # the budget, the graph and the records
    record = json.loads((artifact / "case.json").read_text())
    budget = record["evidence_budget"]
    assert budget["max_evidence_bytes"] == 2 * MiB
    assert budget["omitted"] and budget["omitted"][0].startswith("test_data_set_0")
    summaries = json.loads((artifact / SUMMARIES).read_text())
    assert sorted(summaries) == budget["summarised"]
    assert not (artifact / "test_data_set_0").exists()
    # The first output fits; every later one is a summary: shape, dtype, hash, statistics.
    stored = [r for r in rows if r["actual_file"] and r["actual_file"] not in summaries]
    summarised = [r for r in rows if r["actual_file"] in summaries]
    assert summarised, "the budget summarised some outputs"
    some = summaries[str(summarised[0]["actual_file"])]
    assert some["shape"] == [250, 1000] and some["dtype"] == "float32"
    assert some["sha256"] == summarised[0]["actual_hash"]
    assert {"min", "max", "mean", "std", "nan", "inf", "largest"} <= set(some)
    assert "over the case's 2.0 MiB evidence budget" in some["reason"]
    for row in summarised:
        details = json.loads(str(row["details"]))
        assert "kept as a summary" in details["evidence"]
        assert isinstance(details.get("worst", []), list)
    x = load_array(artifact, record["inputs"]["X"])
    assert tensor_hash(np.tile(x, (250, 1))) == some["sha256"]  # the hash is the tensor's
    with pytest.raises(ArtifactError, match="was kept as a summary only"):
        load_array(artifact, str(summarised[0]["actual_file"]))
    assert stored and summary_of(artifact, str(stored[0]["actual_file"])) is None
    assert load_array(artifact, str(stored[0]["actual_file"])).shape == (250, 1000)
    # A replay re-runs the case: bit-identical outputs are recognised by their hashes.
    # (Replay re-runs the paths, contracts and variants; the model:* family is not replayed.)
    report = replay_artifact(artifact)
    replayed = [o for o in report.observations if not o.check.startswith("model:")]
    assert {o.status for o in replayed} == {"bit_exact"}
    assert {o.check for o in replayed} >= {"agreement", "expected"}
    assert (artifact / PACKED).stat().st_size < 2 * MiB + 4096


def test_an_input_over_the_budget_is_refused_with_its_shape(tmp_path: Path) -> None:
    from gero_runner.errors import GeroError

    with pytest.raises(GeroError, match=r"input 'X' of shape \[1, 1000\] \(model\) would take "
                                        r"0\.0 GiB, over the 0\.0 MiB a tensor may take "
                                        r"\(--max-tensor-mb\)"):
        run(tmp_path / "data", tiled(tmp_path / "small.onnx", 2), max_tensor_mb=0.001)

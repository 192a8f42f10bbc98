"""User models: what to feed (--input, --input-range, --input-value, --inputs, --dim), one
value per dimension name, defaults that do not degenerate, and warnings that say so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from model_helpers import opts, request
from onnx import TensorProto, helper, numpy_helper
from shared_helpers import rows_of, save

from gero_runner.cases.user_models import cases_for_request
from gero_runner.errors import GeroError
from gero_runner.models import signature
from gero_runner.run import RunRequest, execute
from gero_runner.storage.artifacts import load_array

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def shared_dim_model(tmp: Path) -> str:
    """input[batch, sequence] and state[2, batch, 4]: silero's layout (batch at axes 0 and 1)."""
    nodes = [helper.make_node("ReduceSum", ["input", "one"], ["s"], keepdims=1),
             helper.make_node("Identity", ["state"], ["stateN"])]
    one = numpy_helper.from_array(np.array([1], dtype=np.int64), "one")
    return save(tmp / "shared.onnx", nodes,
                [helper.make_tensor_value_info("input", F, ["batch", "sequence"]),
                 helper.make_tensor_value_info("state", F, [2, "batch", 4])],
                [helper.make_tensor_value_info("s", F, ["batch", 1]),
                 helper.make_tensor_value_info("stateN", F, [2, "batch", 4])], [one])


def test_one_dimension_name_has_one_value_at_every_axis(tmp_path: Path) -> None:
    path = shared_dim_model(tmp_path)
    (case,) = cases_for_request(request(path, dims=["sequence=512"]))
    assert case.inputs["input"].shape == (2, 512)
    assert case.inputs["state"].shape == (2, 2, 4)  # batch 2 at axis 1 too, not 16
    (case,) = cases_for_request(request(path, dims=["batch=3"]))
    assert case.inputs["input"].shape[0] == case.inputs["state"].shape[1] == 3


def test_a_given_shape_sets_its_dimension_names_everywhere(tmp_path: Path) -> None:
    path = shared_dim_model(tmp_path)
    (case,) = cases_for_request(request(path, input_shapes=["input=1,576"],
                                        input_values=["state=0"]))
    assert case.inputs["input"].shape == (1, 576) and case.inputs["state"].shape == (2, 1, 4)
    assert not case.inputs["state"].any()
    state = next(c for c in case.input_choices if c["name"] == "state")
    assert state["values"] == "constant 0 (--input-value)"
    assert state["dims"] == {"batch": "1 (--input (input axis 0))"}
    with pytest.raises(GeroError, match="'batch' is 3 from --dim but 1 from --input"):
        cases_for_request(request(path, input_shapes=["input=1,576"], dims=["batch=3"]))


def unnamed_batch_model(tmp: Path) -> str:
    return save(tmp / "unnamed.onnx", [helper.make_node("Relu", ["x"], ["y"])],
                [helper.make_tensor_value_info("x", F, [None, 3])],
                [helper.make_tensor_value_info("y", F, [None, 3])])


def test_unnamed_dims_can_be_set_and_are_listed(tmp_path: Path) -> None:
    path = unnamed_batch_model(tmp_path)
    with pytest.raises(GeroError, match=r"can be set: x\[0\]"):
        cases_for_request(request(path, dims=["batch=4"]))
    (case,) = cases_for_request(request(path, dims=["x[0]=4"]))
    assert case.inputs["x"].shape == (4, 3)
    (case,) = cases_for_request(request(path, input_shapes=["x=5,3"]))
    assert case.inputs["x"].shape == (5, 3)
    with pytest.raises(GeroError, match="fixes it at 3"):
        cases_for_request(request(path, input_shapes=["x=5,4"]))
    with pytest.raises(GeroError, match="declares rank 2"):
        cases_for_request(request(path, input_shapes=["x=5"]))
    with pytest.raises(GeroError, match="unknown input"):
        cases_for_request(request(path, input_values=["y=1"]))


def if_model(tmp: Path, *, sr_shape: list[int] | None) -> str:
    """sr (int64 scalar) == 16000 selects y = 2x, else y = 3x."""
    def branch(name: str, factor: float) -> onnx.GraphProto:
        k = numpy_helper.from_array(np.array(factor, dtype=np.float32), f"k_{name}")
        return helper.make_graph([helper.make_node("Mul", ["x", f"k_{name}"], [f"y_{name}"])],
                                 name, [], [helper.make_tensor_value_info(f"y_{name}", F, None)],
                                 [k])
    rate = numpy_helper.from_array(np.array(16000, dtype=np.int64), "rate")
    nodes = [helper.make_node("Equal", ["sr", "rate"], ["is16k"]),
             helper.make_node("If", ["is16k"], ["y"], then_branch=branch("then", 2.0),
                              else_branch=branch("else", 3.0))]
    sr = helper.make_tensor_value_info("sr", I64, sr_shape) if sr_shape is not None else \
        helper.make_tensor_value_info("sr", I64, None)
    return save(tmp / "branch.onnx", nodes,
                [helper.make_tensor_value_info("x", F, ["batch", 4]), sr],
                [helper.make_tensor_value_info("y", F, ["batch", 4])], [rate])


def test_a_scalar_input_value_selects_the_if_branch(tmp_path: Path) -> None:
    path = if_model(tmp_path, sr_shape=[])
    record = execute(RunRequest(models=[path], data_root=tmp_path / "d", repeats=1, jobs=1,
                                checks=(), model_options=opts(input_values=["sr=16000"],
                                                               input_ranges=["x=-1,1"])))
    rows = rows_of(tmp_path / "d", record.run_id)
    row = next(r for r in rows if r["check"] == "agreement" and r["optimization"] == "all")
    art = tmp_path / "d" / row["artifact_path"]
    x = load_array(art, "inputs/input_0.npy")
    sr = load_array(art, "inputs/input_1.npy")
    assert sr.shape == () and sr.dtype == np.int64 and int(sr) == 16000  # rank 0, not [1]
    assert x.min() >= -1 and x.max() <= 1
    assert np.array_equal(load_array(art, row["actual_file"]), x * np.float32(2))
    fed = json.loads(row["details"])["inputs"]
    assert "sr int64 []: constant 16000 (--input-value)" in fed
    assert "uniform in [-1, 1] (--input-range)" in fed
    assert all(r["result"] == "passed" for r in rows), [r["reason"] for r in rows]


def test_a_scalar_is_given_as_an_empty_shape(tmp_path: Path) -> None:
    path = if_model(tmp_path, sr_shape=[])
    (case,) = cases_for_request(request(path, input_shapes=["sr="], input_values=["sr=8000"]))
    assert case.inputs["sr"].shape == () and int(case.inputs["sr"]) == 8000
    with pytest.raises(GeroError, match="declares rank 0"):
        cases_for_request(request(path, input_shapes=["sr=1"]))


def test_integer_ranges_are_inclusive_and_checked(tmp_path: Path) -> None:
    path = if_model(tmp_path, sr_shape=[])
    (case,) = cases_for_request(request(path, input_ranges=["sr=7,8"]))
    assert int(case.inputs["sr"]) in (7, 8)
    with pytest.raises(GeroError, match="not an integer"):
        cases_for_request(request(path, input_values=["sr=1.5"]))
    with pytest.raises(GeroError, match="holds no integer"):
        cases_for_request(request(path, input_ranges=["sr=0.2,0.8"]))
    with pytest.raises(GeroError, match="LO ≤ HI"):
        cases_for_request(request(path, input_ranges=["x=2,1"]))


@pytest.mark.slow
def test_real_arrays_from_an_npz_feed_the_model_and_its_batches(tmp_path: Path) -> None:
    path = unnamed_batch_model(tmp_path)
    rows = np.arange(12, dtype=np.float64).reshape(4, 3) - 5
    npz = tmp_path / "rows.npz"
    np.savez(npz, x=rows)
    record = execute(RunRequest(models=[path], data_root=tmp_path / "d", repeats=1, jobs=1,
                                model_options=opts(inputs_file=str(npz))))
    out = rows_of(tmp_path / "d", record.run_id)
    art = tmp_path / "d" / out[0]["artifact_path"]
    assert np.array_equal(load_array(art, "inputs/input_0.npy"), rows.astype(np.float32))
    assert "array 'x' of" in json.loads(out[0]["details"])["inputs"]
    assert "(cast from float64)" in json.loads(out[0]["details"])["inputs"]
    partition = [r for r in out if r["check"] == "contract:partition"]
    assert partition and all(r["result"] == "passed" for r in partition)
    np.savez(npz, x=rows.astype(np.int64))
    with pytest.raises(GeroError, match="is int64; the model takes float32"):
        cases_for_request(request(path, inputs_file=str(npz)))
    np.savez(npz, z=rows)
    with pytest.raises(GeroError, match="has unknown input"):
        cases_for_request(request(path, inputs_file=str(npz)))
    np.save(tmp_path / "one.npy", rows)
    with pytest.raises(GeroError, match=r"not an \.npz"):
        cases_for_request(request(path, inputs_file=str(tmp_path / "one.npy")))


def conv_chain(tmp: Path, stages: int) -> str:
    """x[batch, 3, ?, ?] through ``stages`` stride-2 3×3 convolutions and a 2×2 max pool."""
    rng = np.random.default_rng(0)
    nodes, inits, prev, ch = [], [], "x", 3
    for i in range(stages):
        w = numpy_helper.from_array(rng.standard_normal((4, ch, 3, 3)).astype(np.float32),
                                    f"w{i}")
        inits.append(w)
        nodes.append(helper.make_node("Conv", [prev, f"w{i}"], [f"c{i}"], strides=[2, 2],
                                      pads=[1, 1, 1, 1]))
        prev, ch = f"c{i}", 4
    nodes.append(helper.make_node("MaxPool", [prev], ["y"], kernel_shape=[2, 2],
                                  strides=[2, 2]))
    return save(tmp / "convs.onnx", nodes,
                [helper.make_tensor_value_info("x", F, ["batch", 3, None, None])],
                [helper.make_tensor_value_info("y", F, ["batch", 4, None, None])], inits)


def test_spatial_defaults_follow_the_graphs_downsampling(tmp_path: Path) -> None:
    path = conv_chain(tmp_path, stages=5)
    model = onnx.load(path)
    specs = signature.input_specs(model)
    sizes = signature.spatial_defaults(model, specs)
    # 5 stride-2 convolutions and a stride-2 pool: 64×; the pool needs 2 at 32×
    assert sizes == {"x[2]": 64, "x[3]": 64}
    (case,) = cases_for_request(request(path))
    assert case.inputs["x"].shape == (2, 3, 64, 64)
    assert case.warnings == ()
    assert next(iter(case.expected.values())).shape == (2, 4, 1, 1)  # type: ignore[union-attr]
    x = next(c for c in case.input_choices if c["name"] == "x")
    assert x["dims"]["x[2]"] == "64 (default: what the graph's downsampling needs)"


@pytest.mark.slow
def test_an_empty_intermediate_and_a_constant_output_are_warned_about(tmp_path: Path) -> None:
    """x[:, 5:] of a 4-wide input is empty, and its sum is a constant 0."""
    starts = numpy_helper.from_array(np.array([5], dtype=np.int64), "starts")
    ends = numpy_helper.from_array(np.array([100], dtype=np.int64), "ends")
    axes = numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")
    nodes = [helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["tail"]),
             helper.make_node("ReduceSum", ["tail", "axes"], ["y"], keepdims=0)]
    path = save(tmp_path / "empty.onnx", nodes,
                [helper.make_tensor_value_info("x", F, ["batch", "width"])],
                [helper.make_tensor_value_info("y", F, ["batch"])], [starts, ends, axes])
    warnings: list[str] = []
    record = execute(RunRequest(models=[path], data_root=tmp_path / "d", repeats=1, jobs=1,
                                checks=(), model_options=opts(dims=["width=4"])),
                     warn=warnings.append)
    assert record.case_count == 1
    assert any("intermediate tensor 'tail'" in w and "shape [2, 0]" in w and "--input" in w
               for w in warnings), warnings
    assert any("output 'y' is constant" in w for w in warnings), warnings
    warnings.clear()
    execute(RunRequest(models=[path], data_root=tmp_path / "d", repeats=1, jobs=1, checks=(),
                       model_options=opts(dims=["width=8"])), warn=warnings.append)
    assert warnings == []


def test_a_question_mark_dim_param_names_nothing(tmp_path: Path) -> None:
    """Paddle writes '?' at every dynamic axis; a height is not thereby tied to a width."""
    path = conv_chain(tmp_path, stages=1)
    model = onnx.load(path)
    for axis in (2, 3):
        model.graph.input[0].type.tensor_type.shape.dim[axis].dim_param = "?"
    onnx.save(model, path)
    specs = signature.input_specs(onnx.load(path))
    assert specs[0].dims == ("batch", 3, None, None)
    assert signature.dynamic_dims(specs) == ["batch", "x[2]", "x[3]"]


# Defaults that follow what the graph says (issue 28 item 10): each test fails where the
# default ignores it (standard normal, the smallest size the strides allow, ids in [0, 100)).

def _choice(case: object, name: str) -> dict[str, Any]:
    return next(c for c in case.input_choices if c["name"] == name)  # type: ignore[attr-defined]


def test_an_image_size_stated_in_the_metadata_is_fed(tmp_path: Path) -> None:
    """Ultralytics writes imgsz: [320, 320]; its strides alone would allow 64x64."""
    path = conv_chain(tmp_path, stages=5)
    model = onnx.load(path)
    helper.set_model_props(model, {"imgsz": "[320, 256]", "stride": "32"})
    onnx.save(model, path)
    (case,) = cases_for_request(request(path))
    assert case.inputs["x"].shape == (2, 3, 320, 256)
    assert _choice(case, "x")["dims"]["x[2]"] == (
        "320 (default: the model's metadata (imgsz: [320, 256]))")


def test_an_input_resized_to_constant_sizes_is_fed_at_that_size(tmp_path: Path) -> None:
    sizes = numpy_helper.from_array(np.array([1, 3, 96, 128], dtype=np.int64), "sizes")
    nodes = [helper.make_node("Resize", ["x", "", "", "sizes"], ["r"], mode="linear"),
             helper.make_node("ReduceMean", ["r"], ["y"], axes=[1, 2, 3], keepdims=0)]
    path = save(tmp_path / "resize.onnx", nodes,
                [helper.make_tensor_value_info("x", F, [1, 3, "h", "w"])],
                [helper.make_tensor_value_info("y", F, [1])], [sizes], opsets={"": 17})
    (case,) = cases_for_request(request(path))
    assert case.inputs["x"].shape == (1, 3, 96, 128)
    assert "resizes it to (96x128)" in _choice(case, "x")["dims"]["h"]


def test_values_follow_the_graphs_leading_normalisation(tmp_path: Path) -> None:
    """(x / 255 - mean) / std: the graph expects pixel values, and is fed values its own
    normalisation maps to standard normal, not N(0, 1) pixels."""
    mean = numpy_helper.from_array(np.array([0.485, 0.456, 0.406], np.float32)
                                   .reshape(3, 1, 1), "mean")
    std = numpy_helper.from_array(np.array([0.229, 0.224, 0.225], np.float32)
                                  .reshape(3, 1, 1), "std")
    scale = numpy_helper.from_array(np.array(255.0, np.float32), "scale")
    nodes = [helper.make_node("Div", ["x", "scale"], ["u"]),
             helper.make_node("Sub", ["u", "mean"], ["c"]),
             helper.make_node("Div", ["c", "std"], ["y"])]
    path = save(tmp_path / "norm.onnx", nodes,
                [helper.make_tensor_value_info("x", F, [1, 3, 32, 32])],
                [helper.make_tensor_value_info("y", F, [1, 3, 32, 32])], [mean, std, scale])
    (case,) = cases_for_request(request(path))
    x = case.inputs["x"].astype(np.float64)
    normalised = (x / 255 - np.array([0.485, 0.456, 0.406]).reshape(3, 1, 1)) / np.array(
        [0.229, 0.224, 0.225]).reshape(3, 1, 1)
    assert abs(normalised.mean()) < 0.1 and 0.9 < normalised.std() < 1.1
    assert 60 < x.mean() < 200  # pixel values, not N(0, 1)
    assert "leading normalisation" in str(_choice(case, "x")["values"])


def test_a_graph_without_a_leading_normalisation_keeps_standard_normal(tmp_path: Path) -> None:
    w = numpy_helper.from_array(np.full((3, 3), 2.0, np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"])]
    path = save(tmp_path / "mm.onnx", nodes, [helper.make_tensor_value_info("x", F, [4, 3])],
                [helper.make_tensor_value_info("y", F, [4, 3])], [w])
    (case,) = cases_for_request(request(path))
    assert _choice(case, "x")["values"] == "standard normal (default)"


def test_ids_fed_to_a_one_hot_through_a_cast_span_its_depth(tmp_path: Path) -> None:
    """magika: int32 bytes -> Cast -> OneHot(depth 257) -> MatMul; [0, 100) would never
    feed a byte over 99."""
    depth = numpy_helper.from_array(np.array(257, np.int64), "depth")
    values = numpy_helper.from_array(np.array([0.0, 1.0], np.float32), "values")
    w = numpy_helper.from_array(np.ones((257, 2), np.float32), "w")
    nodes = [helper.make_node("Cast", ["bytes"], ["b64"], to=TensorProto.INT64),
             helper.make_node("OneHot", ["b64", "depth", "values"], ["oh"], axis=-1),
             helper.make_node("MatMul", ["oh", "w"], ["y"])]
    path = save(tmp_path / "onehot.onnx", nodes,
                [helper.make_tensor_value_info("bytes", TensorProto.INT32, ["batch", 512])],
                [helper.make_tensor_value_info("y", F, ["batch", 512, 2])], [depth, values, w])
    (case,) = cases_for_request(request(path))
    assert int(case.inputs["bytes"].max()) > 200
    assert _choice(case, "bytes")["values"] == "uniform integers in [0, 256] (default)"


def test_ids_compared_into_a_one_hot_span_the_weight_rows(tmp_path: Path) -> None:
    """jax2tf (magika): Unsqueeze -> Equal(ids, iota) -> Cast -> MatMul by [257, 2]."""
    iota = numpy_helper.from_array(np.arange(257, dtype=np.int32), "iota")
    axes = numpy_helper.from_array(np.array([-1], np.int64), "axes")
    w = numpy_helper.from_array(np.ones((257, 2), np.float32), "w")
    nodes = [helper.make_node("Unsqueeze", ["bytes", "axes"], ["b1"]),
             helper.make_node("Equal", ["b1", "iota"], ["eq"]),
             helper.make_node("Cast", ["eq"], ["oh"], to=F),
             helper.make_node("MatMul", ["oh", "w"], ["y"])]
    path = save(tmp_path / "eq.onnx", nodes,
                [helper.make_tensor_value_info("bytes", TensorProto.INT32, ["batch", 512])],
                [helper.make_tensor_value_info("y", F, ["batch", 512, 2])], [iota, axes, w])
    (case,) = cases_for_request(request(path))
    assert _choice(case, "bytes")["values"] == "uniform integers in [0, 256] (default)"


def test_ids_into_a_dequantized_embedding_span_its_rows(tmp_path: Path) -> None:
    """A weight-only int8 embedding (minilm): Gather(Cast(table_q) * scale, ids)."""
    table = numpy_helper.from_array(np.ones((1000, 4), np.int8), "table_q")
    scale = numpy_helper.from_array(np.full((1000, 1), 0.1, np.float32), "scale")
    nodes = [helper.make_node("Cast", ["table_q"], ["table_f"], to=F),
             helper.make_node("Mul", ["table_f", "scale"], ["table"]),
             helper.make_node("Gather", ["table", "input_ids"], ["y"])]
    path = save(tmp_path / "emb.onnx", nodes,
                [helper.make_tensor_value_info("input_ids", I64, ["batch", "seq"])],
                [helper.make_tensor_value_info("y", F, ["batch", "seq", 4])], [table, scale])
    (case,) = cases_for_request(request(path))
    assert _choice(case, "input_ids")["values"] == "uniform integers in [0, 999] (default)"


def test_integer_inputs_given_calibrate_the_int8_static_variant(tmp_path: Path) -> None:
    """magika feeds bytes (int32) to an embedding: its --inputs are the data every activation
    comes from, so int8-static is calibrated on them (it said 'uncalibrated: seeded N(0,1)
    noise, give --inputs' with --inputs given)."""
    table = numpy_helper.from_array(
        np.random.default_rng(0).standard_normal((257, 16)).astype(np.float32), "table")
    w = numpy_helper.from_array(
        np.random.default_rng(1).standard_normal((16, 4)).astype(np.float32), "w")
    path = save(tmp_path / "bytes.onnx",
                [helper.make_node("Gather", ["table", "bytes"], ["e"]),
                 helper.make_node("MatMul", ["e", "w"], ["y"])],
                [helper.make_tensor_value_info("bytes", TensorProto.INT32, [2, 8])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, 4])],
                [table, w])
    npz = tmp_path / "real.npz"
    np.savez(npz, bytes=np.arange(16, dtype=np.int32).reshape(2, 8))
    (case,) = cases_for_request(request(path, inputs_file=str(npz),
                                        variants=["int8-static"]))
    checks = case.model_checks
    assert checks is not None
    assert checks.calibration_source == "the --inputs arrays of real.npz"
    assert checks.calibration  # one sample: the arrays fed

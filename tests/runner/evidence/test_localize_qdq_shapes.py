"""`gero localize`, as a real process, where OpenVINO computes a QuantizeLinear →
DequantizeLinear → Add chain wrongly only at the model's symbolic dimensions (the MiniLM
int8-static attention mask, issue 40 defect 1): the region run alone keeps the model's
symbolic dimensions, so it shows what the traced run did and is named the origin, the
mask's QuantizeLinear -> DequantizeLinear -> Add inside it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from evidence_helpers import localized, row_where
from gero_processes import gero
from localize_models import dynamic_mask_attention, dynamic_mask_attention_inputs
from shared_helpers import obs_rows


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("openvino") is None, reason="needs OpenVINO")
def test_a_mask_pair_fused_at_symbolic_shapes_is_the_origin(tmp_path: Path) -> None:
    model = dynamic_mask_attention(tmp_path / "mask.onnx")
    inputs = dynamic_mask_attention_inputs(tmp_path / "inputs.npz")
    root = tmp_path / "data"
    done = gero("run", "--model", str(model), "--inputs", str(inputs), "--backends",
                "onnxruntime,openvino", "--data-dir", str(root), "-q", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    row = row_where(obs_rows(root), check="model:fp32", backend="openvino", optimization="f32",
                    output_name="Y")
    assert row["result"] == "contract_issue"  # inf where ONNX Runtime is finite
    loc = localized(root, row)
    # Before: the region was fed fixed shapes, OpenVINO computed it exactly, and the row
    # was "not localized".
    assert loc["origins"], loc["summary"]
    origin = loc["origins"][0]
    assert {"QuantizeLinear 'Mask/Quantize'", "DequantizeLinear 'Mask/Dequantize'",
            "Add 'Mask/Add'"} <= set(origin["nodes"])
    assert origin["inputs_scaled_error"] == 0
    # Inside it, the mask's pair and the Add, run as one from the reference's values.
    assert origin["within"] == ("QuantizeLinear 'Mask/Quantize' -> DequantizeLinear "
                                "'Mask/Dequantize' -> Add 'Mask/Add', run as one")
    assert "not localized" not in loc["summary"]

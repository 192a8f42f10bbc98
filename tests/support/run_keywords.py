"""A value other than the default for every keyword of ``gero.run`` (``RunKeywords``), in the
form the command line's flags take too (names as lists, ``NAME=VALUE`` strings, paths as
text): the tests that hold every keyword to its field and every flag to its keyword read it,
so a new option is one line here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def every_keyword(tmp_path: Path) -> dict[str, Any]:
    model, arrays = tmp_path / "m.onnx", tmp_path / "x.npz"
    model.write_bytes(b"")  # only its existence is checked when the request is made
    np.savez(arrays, x=np.zeros(2, np.float32))
    return dict(
        suite="all", models=[str(model)], ops=["Exp", "Abs"], dtypes=["float16"],
        data_dir=str(tmp_path / "d"), run_id="r1", jobs=3, threads=2, repeats=4, seed=7,
        rtol=["float16=1e-2"], atol=["float32=1e-3"], dims=["batch=4"],
        input_shapes=["x=1,3"], input_ranges=["x=-1,1"], input_values=["y=0.5"],
        inputs_file=str(arrays), task="classifier", variants=["fp16", "int8-dynamic"],
        output_kinds=["y=dense"], calibration_file=str(arrays), decision_axes=["y=1"],
        backends=["onnxruntime"], timeout=9.0, limit=2, contracts=False,
        command_line="gero run ...", executor="dask", scheduler="tcp://h:1",
        max_tensor_mb=8.0, max_evidence_mb=2.0, path_budget=5.0,
        skip_paths=["tract:unoptimized", "ov:f32"], reuse=False, paths="all")

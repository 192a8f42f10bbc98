"""Helpers for the user-model tests: small ONNX files written with onnx.helper, request
options as a script writes them, and the stored rows of a run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import onnx
from onnx import helper

from gero_runner.run import ModelOptions, RunRequest
from gero_runner.storage.store import DataRoot


def rows_of(root: Path, run_id: str) -> list[dict[str, Any]]:
    path = DataRoot(root).run_dir(run_id) / "observations.parquet"
    rel = duckdb.read_parquet(str(path))
    return [dict(zip(rel.columns, r, strict=True)) for r in rel.fetchall()]


def save(path: Path, nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
         outputs: list[onnx.ValueInfoProto], inits: list[onnx.TensorProto] | None = None,
         opsets: dict[str, int] | None = None) -> str:
    imports = [helper.make_opsetid(d, v) for d, v in (opsets or {"": 17}).items()]
    model = helper.make_model(helper.make_graph(nodes, path.stem, inputs, outputs, inits or []),
                              opset_imports=imports)
    model.ir_version = 9
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return str(path)


def opts(**options: Any) -> ModelOptions:
    """ModelOptions from lists, as a script would write them."""
    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in options.items()}
    return ModelOptions(**fields)


def request(path: str, **options: Any) -> RunRequest:
    return RunRequest(models=[path], model_options=opts(**options))

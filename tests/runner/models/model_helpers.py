"""Helpers for the user-model tests: request options as a script writes them (small ONNX
files and a run's stored rows come from tests/support/shared_helpers.py)."""

from __future__ import annotations

from typing import Any

from gero_runner.run import ModelOptions, RunRequest


def opts(**options: Any) -> ModelOptions:
    """ModelOptions from lists, as a script would write them."""
    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in options.items()}
    return ModelOptions(**fields)


def request(path: str, **options: Any) -> RunRequest:
    return RunRequest(models=[path], model_options=opts(**options))

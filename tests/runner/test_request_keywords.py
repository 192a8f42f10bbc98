"""The keywords of ``gero.run`` are one table (``RunKeywords``): each is read once by its
``Option`` into one field of the request, a value of the wrong kind is one sentence naming
the keyword, and the request checks its values once as it is made."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from run_keywords import every_keyword

from gero_runner.errors import GeroError
from gero_runner.request import (
    ModelOptions,
    RunKeywords,
    RunRequest,
    request_from_keywords,
    run_options,
)
from gero_runner.tolerances import Tolerances


def _changed(request: RunRequest, base: RunRequest) -> set[str]:
    top = {f.name for f in fields(RunRequest)
           if f.name != "model_options" and getattr(request, f.name) != getattr(base, f.name)}
    model = {f"model_options.{f.name}" for f in fields(ModelOptions)
             if getattr(request.model_options, f.name) != getattr(base.model_options, f.name)}
    return top | model


def test_every_keyword_fills_its_own_field(tmp_path: Path) -> None:
    given = every_keyword(tmp_path)
    assert set(given) == set(RunKeywords.__annotations__) == set(run_options())
    model_fields = {f.name for f in fields(ModelOptions)}
    for keyword, value in given.items():
        # what the keyword needs beside it: a model for a model option, Dask for a scheduler
        context: dict[str, Any] = {"data_dir": tmp_path / "base", "jobs": 1}
        if keyword in model_fields:
            context["models"] = given["models"]
        if keyword == "scheduler":
            context["executor"] = "dask"
        base = request_from_keywords(context)
        request = request_from_keywords({**context, keyword: value})
        option = run_options()[keyword]
        field = (f"model_options.{keyword}" if keyword in model_fields else
                 "tolerances" if keyword in ("rtol", "atol") else option.into or keyword)
        assert _changed(request, base) == {field}, keyword


def test_mappings_are_read_like_the_flags_items(tmp_path: Path) -> None:
    given = every_keyword(tmp_path)
    as_mappings = {**given, "rtol": {"float16": 1e-2}, "atol": {"float32": 1e-3},
                   "dims": {"batch": 4}, "input_shapes": {"x": "1,3"},
                   "input_ranges": {"x": "-1,1"}, "input_values": {"y": 0.5},
                   "output_kinds": {"y": "dense"}, "decision_axes": {"y": 1},
                   "models": Path(given["models"][0]), "data_dir": Path(given["data_dir"]),
                   "ops": ("Exp", "Abs")}
    request = request_from_keywords(as_mappings)
    assert request == request_from_keywords(given)
    assert request.models == given["models"] and request.data_root == tmp_path / "d"
    assert request.checks == () and request.timeout_s == 9.0 and request.path_budget_s == 5.0
    assert request.tolerances == Tolerances.with_overrides({"float16": 1e-2},
                                                           {"float32": 1e-3})
    assert request.model_options.decision_axes == ("y=1",)


def test_a_generator_is_read_whole(tmp_path: Path) -> None:
    model = every_keyword(tmp_path)["models"][0]
    request = request_from_keywords({"ops": (o for o in ["Exp", "Abs"]),
                                     "models": iter([model]),
                                     "dims": (f"{n}=4" for n in ["batch"])})
    assert request.ops == ["Exp", "Abs"] and request.models == [model]
    assert request.model_options.dims == ("batch=4",)


def test_a_keyword_left_out_takes_the_flags_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GERO_DATA_DIR", "/tmp/somewhere")
    request = request_from_keywords({})
    assert request.data_root == Path("/tmp/somewhere")
    assert request.backends is None  # every installed runtime, like no --backends
    assert request.jobs >= 1 and request.checks == ("contracts", "variants")


@pytest.mark.parametrize(("keywords", "message"), [
    ({"sead": 3}, "unknown option 'sead'; the options are suite, models, ops"),
    ({"ops": "Abs"}, "ops must be a list of names, not the string 'Abs': give ['Abs']"),
    ({"skip_paths": [1]}, "skip_paths must be a list of names (strings), got [1]"),
    ({"backends": "onnxruntime"}, "backends must be a list of names, not the string"),
    ({"models": 5}, "models must be paths of ONNX files, got 5"),
    ({"data_dir": 3}, "data_dir must be a path, got 3"),
    ({"inputs_file": 3.5}, "inputs_file must be a path, got 3.5"),
    ({"task": 1}, "task must be a string, got 1"),
    ({"dims": "batch=4"}, "dims: expected NAME=VALUE items or a mapping, got 'batch=4'"),
    ({"dims": ["batch"]}, "dims: expected NAME=VALUE items or a mapping, got 'batch'"),
    ({"dims": 5}, "dims: expected NAME=VALUE items or a mapping, got 5"),
    ({"rtol": ["float16"]}, "bad --rtol 'float16': expected DTYPE=VALUE"),
    ({"atol": {"float16": -1}}, "bad --atol 'float16=-1': a tolerance is a finite"),
    ({"contracts": "no"}, "contracts must be True or False, got 'no'"),
    ({"seed": -1}, "seed (--seed) must be a whole number from 0"),
    ({"paths": "some"}, "paths (--paths) must be needed or all, got 'some'"),
])
def test_a_bad_keyword_is_one_sentence_naming_it(keywords: dict[str, Any],
                                                  message: str) -> None:
    with pytest.raises(GeroError) as error:
        request_from_keywords(keywords)
    assert message in str(error.value)

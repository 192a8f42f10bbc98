"""The first verdict early: the deployed ONNX Runtime setting against the float64 shadow
reaches progress as soon as that path ran, while the case's other parts still run, and the
progress line of ``gero run`` shows it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from shared_helpers import classifier

from gero_cli.run_cmd import _Bars
from gero_runner.execution.plan import Activity, Running
from gero_runner.run import RunRequest, execute


@pytest.mark.slow
def test_the_deployed_ort_setting_against_float64_comes_before_the_case_is_judged(
        tmp_path: Path) -> None:
    model = classifier(tmp_path / "c.onnx")
    seen: list[Activity] = []
    execute(RunRequest(data_root=tmp_path / "data", models=[model], jobs=1, repeats=1,
                       backends=("onnxruntime",), run_id="r"), activity=seen.append)
    early = [a for a in seen if a.early]
    assert early, "no progress report carried a first verdict"
    assert early[0].early == ("onnxruntime all against float64: within its gates",)
    assert early[0].parts_done < early[0].parts_planned  # the case still had parts to run


class _Bar:
    def __init__(self) -> None:
        self.descriptions: list[str] = []

    def add_task(self, description: str, **_: Any) -> int:
        self.descriptions.append(description)
        return len(self.descriptions)

    def update(self, task: int, **given: Any) -> None:
        if "description" in given:
            self.descriptions.append(given["description"])


def test_the_progress_line_shows_the_newest_first_verdict() -> None:
    bar = _Bar()
    bars = _Bars(bar, plain=True)
    bars.paths(Activity((Running("tract optimized on the model", 3.2, 60.0),), 2, 9))
    bars.paths(Activity((Running("tract optimized on the model", 4.0, 60.0),), 3, 9,
                        ("onnxruntime all against float64: within its gates",)))
    assert bar.descriptions[-2] == "paths (7 left): tract optimized on the model 3/60 s"
    assert bar.descriptions[-1] == ("paths (6 left; onnxruntime all against float64: "
                                    "within its gates): tract optimized on the model 4/60 s")

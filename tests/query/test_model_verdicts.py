"""The verdict card, on fixed model rows: each runtime setting × file safe, off (the figure,
the gate, the arbiter) or cannot-run (why), aggregated by DuckDB."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from verdict_rows import model_row as _row
from verdict_rows import write_model_run as _write

from gero.query.verdicts import (
    CANNOT_RUN,
    FILES,
    NOT_BUILT,
    NOT_RUN,
    OFF,
    SAFE,
    Verdict,
    all_safe,
    arbiter_words,
    causes,
    verdicts,
)
from gero_runner.errors import GeroError
from gero_runner.schema import MODEL_VARIANTS
from gero_runner.storage.reader import open_run

ORT = ("onnxruntime", "all")
BASIC = ("onnxruntime", "basic")
OV = ("openvino", "f32")


def _fp32(path: tuple[str, str], scaled: float, result: str = "passed",
          **kw: Any) -> dict[str, Any]:
    return _row(path, "model:fp32", result, scaled_error=scaled, scaled_limit=1e-4,
                row_cosine=1.0, **kw)


def _vs_model(path: tuple[str, str], file: str, cosine: float, result: str = "passed",
              **kw: Any) -> dict[str, Any]:
    return _row(path, f"model:{file}:vs-model", result,
                reference=f"fp32:{path[0]}:{path[1]}", row_cosine=cosine,
                need_row_cosine=0.99, scaled_error=0.01, **kw)


def _cosine(path: tuple[str, str], file: str, cosine: float, result: str = "passed",
            **kw: Any) -> dict[str, Any]:
    return _row(path, f"model:{file}:cosine", result, reference=f"{file}:onnxruntime:all",
                row_cosine=cosine, need_row_cosine=0.99, **kw)


def _vs_fp32(path: tuple[str, str], scaled: float, result: str = "passed",
             **kw: Any) -> dict[str, Any]:
    return _row(path, "model:fp16:vs-fp32", result, reference="fp32:onnxruntime:all",
                scaled_error=scaled, limit=4e-3, **kw)


def _card(root: Path, model: str | None = None) -> dict[tuple[str, str, str], Verdict]:
    return {(v.runtime, v.setting, v.file): v for v in verdicts(open_run(root), model)}


def test_the_card_names_every_file_and_the_vocabulary_is_the_runners() -> None:
    assert set(FILES[1:]) == set(MODEL_VARIANTS)


def test_safe_and_off_with_the_figure_the_gate_and_the_arbiter(tmp_path: Path) -> None:
    rows = [_fp32(ORT, 2e-7), _fp32(OV, 2.7e-3, "divergence"),
            # two outputs off: the verdict names the worse
            _fp32(OV, 5e-3, "divergence", output="z"),
            _row(ORT, "agreement"), _row(OV, "agreement", "divergence")]
    card = _card(_write(tmp_path, rows))
    assert set(card) == {(*ORT, "fp32"), (*OV, "fp32")}
    safe, off = card[(*ORT, "fp32")], card[(*OV, "fp32")]
    assert (safe.verdict, safe.figure, safe.gate, safe.arbiter) == (SAFE, 2e-7, 1e-4,
                                                                      "float64-shadow")
    assert (off.verdict, off.measure, off.figure, off.gate, off.direction, off.output) == (
        OFF, "scaled error", 5e-3, 1e-4, "<=", "z")
    assert (off.observations, off.not_passed, off.check) == (2, 2, "model:fp32")
    assert off.figure_text() == "scaled error 0.005 > 0.0001"
    assert safe.figure_text() == "scaled error 2e-07 ≤ 0.0001"
    assert arbiter_words(off.arbiter) == "the float64 shadow"
    assert not all_safe(list(card.values())) and all_safe([safe])


def test_a_file_quantisation_ruins_is_off_on_every_setting_of_the_runtime(
        tmp_path: Path) -> None:
    # ORT basic agrees with ORT all on the int8 file, which is far off the fp32 model.
    rows = [_fp32(ORT, 1e-7), _fp32(BASIC, 1e-7),
            _vs_model(ORT, "int8-dynamic", 0.47, "divergence"),
            _cosine(BASIC, "int8-dynamic", 0.99999)]
    card = _card(_write(tmp_path, rows))
    basic = card[(*BASIC, "int8-dynamic")]
    assert (basic.verdict, basic.inherited, basic.check, basic.figure) == (
        OFF, True, "model:int8-dynamic:vs-model", 0.47)
    assert basic.figure_text() == "row cosine 0.470000 < 0.990000"
    assert basic.arbiters == ("fp32:onnxruntime:all", "int8-dynamic:onnxruntime:all")
    assert arbiter_words(basic.arbiter) == "the fp32 model on onnxruntime all"
    assert card[(*ORT, "int8-dynamic")].inherited is False


def test_what_a_user_ships_decides_before_the_agreement_on_the_file(tmp_path: Path) -> None:
    rows = [_fp32(OV, 1e-7), _vs_model(OV, "int8-static", 0.9, "divergence"),
            _cosine(OV, "int8-static", 0.5, "divergence", yardstick="int8-exact-shadow"),
            _fp32(ORT, 1e-7), _vs_model(ORT, "int8-static", 0.999),
            _cosine(BASIC, "int8-static", 0.6, "divergence", yardstick="int8-exact-shadow")]
    card = _card(_write(tmp_path, rows))
    ov = card[(*OV, "int8-static")]
    assert (ov.check, ov.figure, ov.not_passed) == ("model:int8-static:vs-model", 0.9, 2)
    basic = card[(*BASIC, "int8-static")]
    assert (basic.verdict, basic.check, basic.arbiter) == (
        OFF, "model:int8-static:cosine", "int8-static:onnxruntime:all+int8-exact-shadow")
    assert arbiter_words(basic.arbiter).endswith(", then the file computed exactly")


def test_cannot_run_says_why(tmp_path: Path) -> None:
    rows = [_fp32(ORT, 1e-7), _fp32(OV, 1e-7),
            # the fp16 file on OpenVINO fails; ORT widens it (a note, not a failure)
            _vs_fp32(ORT, 5e-4),
            _row(ORT, "model:fp16:precision", "execution", output="",
                 reason="ONNX Runtime computes the fp16 file in float32"),
            _row(OV, "model:fp16", "execution", output="", reference="fp16:onnxruntime:all",
                 reason="fp16:openvino-f32 failed: no kernel"),
            # the int8-static file could not be built: every setting cannot run it
            _row(ORT, "model:int8-static:build", "execution", output="",
                 reference="int8-static:onnxruntime:all",
                 reason="building the int8-static variant failed: no calibration")]
    card = _card(_write(tmp_path, rows))
    assert card[(*ORT, "fp16")].verdict == SAFE
    ov16 = card[(*OV, "fp16")]
    assert (ov16.verdict, ov16.reason, ov16.figure) == (
        CANNOT_RUN, "fp16:openvino-f32 failed: no kernel", None)
    # a file gero could not build is no runtime's failure: 'not built' on every setting,
    # in no cause (a gero before the notes wrote the build as a failure row)
    ov8, ort8 = card[(*OV, "int8-static")], card[(*ORT, "int8-static")]
    assert ov8.verdict == ort8.verdict == NOT_BUILT
    assert ov8.reason == ort8.reason == ("not built: building the int8-static variant failed: "
                                         "no calibration")
    assert ov8.observation_id == ort8.observation_id != ""
    assert {v.file for group in causes(list(card.values())) for v in group} == {"fp16"}


def test_a_file_gero_could_not_build_is_not_built_on_every_setting(tmp_path: Path) -> None:
    """logreg_iris (issue 40): the int8 builders refuse a model of ai.onnx.ml operators only;
    the runner records it as a note on a passed build row. The int8 columns said 'not
    judged: it is the arbiter' (ONNX Runtime: the build row is its) and 'did not run' with
    the setting's fp32 failure; they say 'not built' and why, and gate no exit status."""
    why = "building the int8-dynamic variant failed: GeroError: the model has no ai.onnx operators"
    rows = [_fp32(ORT, 1e-7), _fp32(OV, 1e-7),
            {**_row(ORT, "model:int8-dynamic:build", output="",
                    reference="int8-dynamic:onnxruntime:all", reason=why), "note": why}]
    card = _card(_write(tmp_path, rows))
    for path in (ORT, OV):
        v = card[(*path, "int8-dynamic")]
        assert (v.verdict, v.reason) == (NOT_BUILT, f"not built: {why}")
    assert all_safe(list(card.values())) and causes(list(card.values())) == []


def test_a_setting_that_fails_on_the_model_cannot_run_it(tmp_path: Path) -> None:
    rows = [_fp32(ORT, 1e-7),
            _row(OV, "agreement", "execution", reason="openvino-f32 failed: unsupported op"),
            _row(OV, "expected", "execution", reason="openvino-f32 failed: unsupported op")]
    v = _card(_write(tmp_path, rows))[(*OV, "fp32")]
    assert (v.verdict, v.reason) == (CANNOT_RUN, "openvino-f32 failed: unsupported op")


def test_non_finite_outputs_are_off_without_a_figure(tmp_path: Path) -> None:
    rows = [_fp32(ORT, 1e-7), _vs_fp32(ORT, float("inf"), "contract_issue",
                                        reason="3 of 6 elements are NaN or inf")]
    v = _card(_write(tmp_path, rows))[(*ORT, "fp16")]
    assert (v.verdict, v.measure, v.reason) == (OFF, "non-finite output",
                                                 "3 of 6 elements are NaN or inf")
    assert v.figure_text() == "non-finite output"
    assert v.as_dict()["figure"] is None  # JSON has no inf


def test_the_arbiter_of_a_model_without_shadow_is_not_judged(tmp_path: Path) -> None:
    rows = [_row(ORT, "agreement"), _row(ORT, "model:noise-floor"),
            _fp32(OV, 1e-7, reference="onnxruntime:all")]
    card = _card(_write(tmp_path, rows))
    assert card[(*OV, "fp32")].verdict == SAFE
    assert card[(*ORT, "fp32")].verdict == CANNOT_RUN
    assert "it is the arbiter" in card[(*ORT, "fp32")].reason


def test_one_model_by_name_or_file_and_an_unknown_one_is_refused(tmp_path: Path) -> None:
    rows = [_fp32(ORT, 1e-7), _fp32(ORT, 1e-7, case="model/n/x", model="n"),
            _row(("onnx-reference", "-"), "model:fp32", model="n", case="model/n/x")]
    root = _write(tmp_path, rows)
    assert {v.model for v in verdicts(open_run(root))} == {"m", "n"}
    assert {v.model for v in verdicts(open_run(root), "n")} == {"n"}
    assert {v.model for v in verdicts(open_run(root), "/some/where/n.onnx")} == {"n"}
    # the ReferenceEvaluator is gero's yardstick, not a runtime a user ships on
    assert {v.runtime for v in verdicts(open_run(root))} == {"onnxruntime"}
    with pytest.raises(GeroError, match=r"has no model 'k'; its models: m, n"):
        verdicts(open_run(root), "k")


def test_round_trip_through_json(tmp_path: Path) -> None:
    (v,) = verdicts(open_run(_write(tmp_path, [_fp32(ORT, 3e-4, "divergence")])))
    assert Verdict.from_dict(json.loads(json.dumps(v.as_dict()))) == v


def test_a_cell_shows_its_own_files_rows_and_a_setting_the_plan_left_out_is_not_run(
        tmp_path: Path) -> None:
    """magika: the plan did not run tract unoptimized on the fp32 model (tract optimized was
    within its gates), only on the int8-dynamic file, where it failed. Its fp32 cell said
    "cannot run" with the int8-dynamic failure; it is "not run (plan)" with the plan's
    why, in no cause and no exit status, and the int8-dynamic cell keeps its own failure."""
    from gero_cli.verdict_cmd import card_lines

    tract, unopt = ("tract", "optimized"), ("tract", "unoptimized")
    failure = "int8-dynamic:tract-unoptimized failed: TractError: Impossible to unify U8 with I8."
    rows = [_fp32(tract, 1e-7),
            _row(unopt, "model:int8-dynamic", "execution", output="",
                 reference="int8-dynamic:onnxruntime:all", reason=failure)]
    root = _write(tmp_path, rows)
    card = _card(root)  # no plan.json: no row of its own, and not the other file's failure
    assert card[(*unopt, "fp32")].verdict == CANNOT_RUN
    assert "Impossible to unify" not in card[(*unopt, "fp32")].reason
    plan = {"not_run": {"tract-unoptimized": "not needed: tract optimized is within its "
                        "gates against float64-shadow"},
            "ran_on_variants": {"tract-unoptimized": ["int8-dynamic"]}}
    folder = root / rows[0]["artifact_path"]
    folder.mkdir(parents=True)
    (folder / "plan.json").write_text(json.dumps(plan))
    card = _card(root)
    fp32, int8 = card[(*unopt, "fp32")], card[(*unopt, "int8-dynamic")]
    assert (fp32.verdict, fp32.reason) == (
        NOT_RUN, "not run (plan): tract optimized is within its gates against float64-shadow")
    assert fp32.observation_id == ""
    assert (int8.verdict, int8.reason) == (CANNOT_RUN, failure)
    assert all(v.verdict != NOT_RUN for group in causes(list(card.values())) for v in group)
    assert all_safe([card[(*tract, "fp32")], fp32])
    lines = card_lines(list(card.values()), "R")
    assert "1 not run (plan)" in lines[0]
    (row,) = [line for line in lines if line.split()[:2] == ["tract", "unoptimized"]]
    assert row.split()[2:6] == ["not", "run", "(plan)", "cannot"], row


def test_a_setting_that_failed_on_a_file_does_not_inherit_its_runtimes_judgement(
        tmp_path: Path) -> None:
    """minilm (issue 40, D9): tract unoptimized, run on the model after it failed on a
    variant file, failed on the int8-dynamic file too; its cell there said 'safe', tract
    optimized's judgement of the file, inherited. Its own failure is its cell's."""
    tract, unopt = ("tract", "optimized"), ("tract", "unoptimized")
    failure = ("int8-dynamic:tract-unoptimized failed: TractError: Undetermined symbol in "
               "expression: sequence_length")
    rows = [_fp32(tract, 1e-7), _vs_model(tract, "int8-dynamic", 0.999),
            _row(unopt, "agreement", "execution", reason="tract-unoptimized failed: x"),
            _row(unopt, "model:int8-dynamic", "execution", output="",
                 reference="int8-dynamic:onnxruntime:all", reason=failure),
            # a setting of the runtime with no row of its own on the file still inherits
            _row(("tract", "mid"), "agreement")]
    card = _card(_write(tmp_path, rows))
    own = card[(*unopt, "int8-dynamic")]
    assert (own.verdict, own.reason, own.inherited) == (CANNOT_RUN, failure, False)
    mid = card[("tract", "mid", "int8-dynamic")]
    assert (mid.verdict, mid.inherited) == (SAFE, True)

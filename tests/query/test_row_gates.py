"""Rows gated by row cosine or argmax (the model family's variant, decision and noise-floor
rows) show their rtol, atol and ULP figures as context, never as what decided them."""

from __future__ import annotations

import pytest

from gero.query.detail import explained_value
from gero.query.finding_report import figures_line
from gero.query.findings import Representative
from gero_runner.checks.gates import non_elementwise_gate


@pytest.mark.parametrize(("check", "gated"), [
    ("model:int8-static:vs-model", "row cosine"),
    ("model:int8-dynamic:cosine", "row cosine"),
    ("model:int8-dynamic:decision", "argmax"),
    ("model:noise-floor", "sensitivity"),
    ("model:fp32", ""), ("model:fp16:scaled", ""), ("expected", ""), ("agreement", ""),
    ("contract:partition", ""), ("", ""), ("model", ""),
])
def test_the_gate_of_a_check(check: str, gated: str) -> None:
    gate = non_elementwise_gate(check)
    assert (gated in gate) if gated else gate == ""


def _fields(check: str) -> dict[str, object]:
    return {"check": check, "result": "divergence", "rtol": 1e-4, "atol": 1e-5,
            "max_ulp": 812.0, "max_abs_error": 0.3}


@pytest.mark.parametrize("column", ["rtol", "atol", "max_ulp"])
def test_the_detail_fields_say_the_tolerance_is_context_on_a_cosine_row(column: str) -> None:
    shown = explained_value(column, _fields("model:int8-static:vs-model"))
    assert "context only" in shown and "row cosine" in shown
    assert "context" not in explained_value(column, _fields("model:fp32"))


def _representative(check: str) -> Representative:
    return Representative("0" * 16, "model/m", check, "float32", "[1, 8]", "onnxruntime",
                          "all", "onnxruntime:all", "divergence", "row cosine 0.79", 0.3,
                          812.0, 1e-4, 1e-5, "")


def test_the_finding_report_quotes_the_gate_not_rtol_on_a_cosine_row() -> None:
    line = figures_line(_representative("model:int8-static:vs-model"))
    assert "gated by row cosine" in line and "rtol =" not in line and "ULP" not in line
    plain = figures_line(_representative("model:fp32"))
    assert "rtol = 0.0001" in plain and "max ULP = 812" in plain


def test_two_settings_of_one_runtime_without_an_arbiter_are_named_by_their_settings() -> None:
    """ddddocr's int8 recogniser: OpenVINO bf16-default against f32, no float64 shadow; the
    title read 'OpenVINO and OpenVINO disagree'."""
    from gero.query.findings import PAIR, Finding, with_title

    rep = Representative("0" * 16, "model/m", "levels", "float32", "[1, 8]", "openvino",
                         "bf16-default", "openvino:f32", "divergence", "", 1.05, None, 1e-4,
                         1e-5, "")
    f = Finding("f" * 12, "", "divergence", "numeric", f"openvino{PAIR}openvino",
                "outside tolerance", "model", 1, 1, ("model",), ("float32",),
                ("bf16-default",), {"divergence": 1}, 1.05, rep)
    title = with_title(f).title
    assert title.startswith("OpenVINO at bf16-default and at f32 disagree on model"), title

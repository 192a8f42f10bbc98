"""The first screen ranks what a user acts on, on a small real run of a stock ONNX Runtime:
Max fed NaN (NaN in, NaN out on every path), Elu in float64 (no ONNX Runtime kernel) and
float16 Softmax (ONNX Runtime off float64 by 0.40). ``gero summary`` counts the first two
apart, the findings list ONNX Runtime's wrong numbers before them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import gero
from gero.query.assessable import NAN, NOT_IMPLEMENTED
from gero_cli import main


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("first-screen")
    assert main(["run", "--ops", "Max,Elu,Softmax", "--dtypes", "float16,float64",
                 "--backends", "onnxruntime", "--repeats", "1", "--jobs", "1",
                 "--data-dir", str(path), "-q"]) == 1
    return path


def test_summary_counts_what_cannot_be_assessed_apart(
        root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", "--data-dir", str(root), "--format", "json"]) == 1
    summary = json.loads(capsys.readouterr().out)
    apart = {e["reason"]: e for e in summary["not_assessable"]}
    assert set(apart) == {NAN, NOT_IMPLEMENTED}
    assert set(apart[NAN]["by_class"]) == {"contract_issue"}
    assert apart[NOT_IMPLEMENTED]["by_class"] == {"execution": summary["counts"]["execution"]}
    act = summary["assessable_counts"]
    assert act["divergence"] == summary["counts"]["divergence"] > 0
    for result in ("divergence", "contract_issue", "execution"):
        assert act[result] + sum(e["by_class"].get(result, 0) for e in apart.values()) \
            == summary["counts"][result]
    assert main(["summary", "--data-dir", str(root)]) == 1
    text = capsys.readouterr().out
    total = sum(e["observations"] for e in apart.values())
    assert f"counted apart, cannot be assessed by construction: {total:,}" in text
    assert f"to act on: {sum(act.values()):,} non-passed" in text
    nan = apart[NAN]["observations"]
    assert f"{nan:,}  NaN in, NaN out: NaN == NaN cannot be assessed (contract)" in text


def test_findings_list_a_runtimes_wrong_numbers_before_what_cannot_be_assessed(
        root: Path) -> None:
    with gero.open_run(None, root) as run:
        findings = run.findings()
    kinds = [f.cannot_assess for f in findings]
    assert kinds[-2:] == [NAN, NOT_IMPLEMENTED] and not any(kinds[:-2])
    softmax = next(i for i, f in enumerate(findings)
                   if f.result == "divergence" and f.operators == ("Softmax",))
    error = findings[softmax].max_abs_error
    assert error is not None and error > 0.3
    assert softmax < len(findings) - 2

"""The conformance matrix across runtimes, on a real run with ONNX Runtime and tract
(tract's optional extra: skipped with its pip command when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gero.query import runtimes
from gero_cli import main
from gero_runner import backends
from gero_runner.run import RunRequest, execute
from gero_runner.storage.reader import open_run


@pytest.fixture(scope="module")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not backends.get("tract").installed():
        pytest.skip(f"tract is not installed ({backends.get('tract').install_hint()})")
    root = tmp_path_factory.mktemp("runtimes")
    execute(RunRequest(data_root=root, ops=["Relu", "Softmax"], dtypes=["float16", "float32"],
                       repeats=1, checks=(), backends=("onnxruntime", "tract")))
    return root


@pytest.mark.slow
def test_matrix_counts_every_setting_of_every_runtime(data_root: Path) -> None:
    rows = runtimes.matrix(open_run(data_root))
    settings = {(r.backend, r.optimization) for r in rows}
    assert {("tract", "optimized"), ("tract", "unoptimized"), ("onnxruntime", "all"),
            ("onnx-reference", "-")} <= settings
    for r in rows:
        assert r.passed + r.divergence + r.contract_issue + r.execution > 0


def test_timings_give_build_and_run_medians_per_setting(data_root: Path) -> None:
    by_setting = {(t.backend, t.optimization): t for t in runtimes.timings(open_run(data_root))}
    tract = by_setting[("tract", "optimized")]
    assert tract.cases > 0 and tract.build_median_ms and tract.run_median_ms
    assert tract.build_median_ms > 0 and tract.run_median_ms > 0


def test_a_runtime_failing_alone_is_a_unique_finding(data_root: Path) -> None:
    view = open_run(data_root)
    found = runtimes.unique_findings(view)
    alone = {(u.backend, u.op_type) for u in found}
    # Cross-check against the rows: each finding's runtime fails where the other passes.
    for backend, op in alone:
        mine = view.query("SELECT count(*) FILTER (WHERE result <> 'passed') FROM obs WHERE "
                          "backend = ? AND op_type = ? AND \"check\" = 'agreement'",
                          [backend, op])[0][0]
        assert mine > 0


def test_summary_prints_the_matrix(data_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", "--data-dir", str(data_root)]) == 1  # findings
    out = capsys.readouterr().out
    assert "runtimes: agreement / analytic / expected comparisons per setting" in out
    assert "tract           optimized" in out and "session build and run" in out
    assert f"tract {backends.get('tract').version()}" in out.splitlines()[1]
    # The operations table times each runtime in a column of its own.
    header = next(line for line in out.splitlines() if line.startswith("operation"))
    assert "ort ms" in header and "tract ms" in header and "runtime ms" not in header
    relu = next(line for line in out.splitlines() if line.startswith("Relu "))
    assert relu.split()[-3:] and all(float(x) > 0 for x in relu.split()[-3:])


def test_operations_give_each_runtime_its_median(data_root: Path) -> None:
    from gero.query.summary import runtime_medians, summary_dict

    view = open_run(data_root)
    medians = runtime_medians(view)
    assert set(medians) == {"Relu", "Softmax"}
    for by in medians.values():
        assert list(by) == ["onnxruntime", "tract"] and all(ms > 0 for ms in by.values())
    ops = {o["op_type"]: o for o in summary_dict(view)["operations"]}
    assert ops["Relu"]["runtime_median_ms_by_backend"] == medians["Relu"]


def test_lower_precision_is_named_from_the_recorded_settings(tmp_path: Path) -> None:
    if not backends.get("openvino").installed():
        pytest.skip(f"openvino is not installed ({backends.get('openvino').install_hint()})")
    execute(RunRequest(data_root=tmp_path, ops=["Relu"], dtypes=["float32"], repeats=1,
                       checks=(), backends=("openvino",)))
    view = open_run(tmp_path)
    found = {(x.optimization, x.precision, x.dtype) for x in runtimes.lower_precision(view)}
    labels = view.query("SELECT DISTINCT optimization, json_extract_string(session_settings, "
                        "'$.inference_precision') FROM obs WHERE optimization LIKE '%-default'")
    if labels:  # this CPU computes float32 in a lower precision by default
        ((label, precision),) = labels
        assert precision in ("bf16", "f16")
        assert found == {(label, precision, "float32")}
    else:  # the default is f32: one path, which says so
        ((default,),) = view.query("SELECT DISTINCT json_extract_string(session_settings, "
                                   "'$.plugin_default') FROM obs WHERE backend = 'openvino'")
        assert default == "f32" and found == set()


def test_diff_pairs_one_runtime_with_another_in_the_same_run(data_root: Path) -> None:
    from gero.query.diff import diff_backends

    report = diff_backends(data_root, None, "tract", "onnxruntime/all")
    counts = report.counts()
    view = open_run(data_root)
    (ort_rows,) = view.query("SELECT count(*) FROM obs WHERE backend = 'onnxruntime' AND "
                             "optimization = 'all'")[0:1]
    # Every baseline row pairs with each tract setting (the same checks ran on both).
    assert counts["compatible_pairs"] + counts["missing"] == 2 * ort_rows[0]
    assert {e.backend for e in report.entries} <= {"tract"}
    for e in report.of("regression"):
        assert e.base_result == "passed" or (e.current_error or 0) > (e.base_error or 0)


def test_diff_between_runtimes_explains_bad_names(data_root: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "--data-dir", str(data_root), "--backend", "tract",
                 "--against", "onnxruntime"]) == 2
    assert "name one, e.g. --against onnxruntime/" in capsys.readouterr().err
    assert main(["diff", "--data-dir", str(data_root), "--backend", "nosuch",
                 "--against", "onnxruntime/all"]) == 2
    assert "no observations of 'nosuch' in this run" in capsys.readouterr().err
    assert main(["diff", "--data-dir", str(data_root), "--backend", "tract"]) == 2

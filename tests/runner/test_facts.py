"""A verdict's facts recorded beside its sentence (schema version 3): the path a failure names
and the words of its cause; and (schema version 4) its kind of failure. A run of a gero before
them reads on: its facts are derived from its reasons, once, and give the same findings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from gero_processes import gero

from gero.query.findings.members.reasons import kind_sql, template_sql
from gero.query.table import BLAMED_SQL
from gero_runner.classify import classify, failure_kind
from gero_runner.facts import (
    CANNOT_RUN,
    FACT_NAMES,
    NAN,
    OUT_OF_BUDGET,
    OUTSIDE,
    VARIANT_FILES,
    cause_of,
    failure_cause,
    failure_facts,
    law_cause,
    law_name,
    nonfinite_kind,
    root_cause,
    scope_of,
    unsupported_op,
)
from gero_runner.metrics.compare import compare
from gero_runner.schema import COLUMN_NAMES, MODEL_VARIANTS, OBSERVATION_SCHEMA, SCHEMA_VERSION
from gero_runner.storage.reader import open_run

TRACT_ERROR = ('TractError: Evaluating #1 "Y.abs" Abs\n\nCaused by:\n    0: Running legacy '
               'eval\n    1: Abs does not support F64')


def test_a_chained_error_is_named_by_its_kind_and_root_cause() -> None:
    assert root_cause(TRACT_ERROR) == "TractError: Abs does not support F64"
    assert root_cause("TractError: Failed analyse\n\nCaused by:\n    2: Impossible to unify "
                      "F16 with F32.\n") == "TractError: Impossible to unify F16 with F32."
    assert root_cause("ran out of its 60 s budget") == "ran out of its 60 s budget"


def test_a_failure_records_its_path_without_the_variant_file() -> None:
    assert failure_cause("fp16:tract-optimized", TRACT_ERROR) == (
        "tract-optimized", "TractError: Abs does not support F64")
    assert failure_cause("ort-all", "boom")[0] == "ort-all"
    assert VARIANT_FILES == MODEL_VARIANTS


def test_a_law_records_its_clause_with_its_figures() -> None:
    assert law_cause("probability_extreme: 7 non-finite value(s) (NaN 7, inf 0)") == (
        "7 non-finite value(s) (NaN 7, inf 0)")
    assert law_cause("variant mul_add: " + TRACT_ERROR) == "TractError: Abs does not support F64"


def test_the_cause_of_an_older_row_is_what_the_runner_records_now() -> None:
    """The derivation for a row written before the facts (its cause NULL) and the recording
    agree: a run reads the same whichever gero wrote it."""
    assert cause_of("fp16:tract-optimized failed: " + TRACT_ERROR, "model:fp16") == (
        failure_cause("fp16:tract-optimized", TRACT_ERROR)[1])
    assert cause_of("known upstream defect k (x) — onnx-reference failed: boom",
                    "agreement") == "boom"
    reason = "probability_extreme: 7 non-finite value(s) (NaN 7, inf 0)"
    assert cause_of(reason, "contract:probability_extreme") == law_cause(reason)
    # a model verdict is its sentence: the figures a title quotes ("its 60 s budget")
    assert cause_of("calibrated on x; scaled error 0.3 > 0.1", "model:fp16:scaled") == (
        "calibrated on x; scaled error 0.3 > 0.1")
    assert cause_of("57 of 64 elements outside atol=0", "agreement") == ""


def test_the_schema_names_them_since_version_3_the_kind_since_4_the_scope_since_5() -> None:
    assert SCHEMA_VERSION == 5
    assert OBSERVATION_SCHEMA.metadata[b"gero.schema_version"] == b"5"
    assert set(FACT_NAMES) <= set(COLUMN_NAMES)
    assert FACT_NAMES == ("failed_path", "cause", "failure_kind", "scope", "cause_key",
                          "note", "figures")


def _derived_kinds(*reasons: str) -> list[str]:
    """The kinds the findings derive for rows recorded without them (``kind_sql``)."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t (i INTEGER, reason VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?, ?)", list(enumerate(reasons)))
    return [k for (k,) in con.execute(
        f"SELECT {kind_sql(template_sql('reason'))} FROM t ORDER BY i").fetchall()]


def test_a_comparison_records_its_typed_kind() -> None:
    """``classify`` knows NaN on both sides, the non-finite side and values outside
    tolerance: the kind recorded is one of these words, never a sentence."""
    nan, inf = np.nan, np.inf
    pairs = {"nan": ([nan, 1.0], [nan, 1.0]), "actual": ([inf, 1.0], [1.0, 1.0]),
             "reference": ([1.0, 1.0], [1.0, nan]), "outside": ([1.0, 2.0], [1.0, 3.0]),
             "nan and outside": ([nan, 2.0], [nan, 3.0]),
             "both": ([nan, inf, 2.0], [nan, 1.0, 3.0]), "shape": ([1.0, 2.0], [1.0])}
    recorded = {}
    for name, (a, r) in pairs.items():
        cmp = compare(np.array(a, np.float32), np.array(r, np.float32), 1e-4, 1e-5)
        assert classify(cmp, 1e-4, 1e-5)[0] != "passed", name
        recorded[name] = failure_kind(cmp)
    assert recorded == {"nan": NAN, "actual": nonfinite_kind("actual"),
                        "reference": nonfinite_kind("reference"), "outside": OUTSIDE,
                        "nan and outside": OUTSIDE, "both": nonfinite_kind("actual"),
                        "shape": OUTSIDE}


def test_a_failures_cause_key_is_the_one_derived_for_a_row_written_before() -> None:
    """The runner keys a failure no known cause names by its masked error (``error_key``);
    the derivation for a row a gero before wrote gives the same key from its reason
    (``storage.derivation``): the same finding ids whichever gero wrote the run."""
    from gero_runner.facts import error_key
    from gero_runner.storage.derivation import derived_key_sql

    errors = {"fp16:tract-optimized": TRACT_ERROR,
              "tract-optimized": "TractError: Impossible to unify F16 with F32.",
              "ort-all": "RuntimeException: [ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : "
                         "Non-zero status code returned while running ScatterElements node. "
                         "Name:'n' Status Message: MLFloat16 is not supported",
              "ort-basic": "NotImplemented: Could not find an implementation for Erf(13) "
                           "node with name 'n1'",
              "onnx-reference": "RuntimeError: No implementation for operator "
                                "'DequantizeLinear' domain '' and version 17, found 19."}
    con = duckdb.connect()
    con.execute("CREATE TABLE t (reason VARCHAR)")
    reasons = [f"{path} failed: {error}" for path, error in errors.items()]
    con.executemany("INSERT INTO t VALUES (?)", [[r] for r in reasons])
    key = derived_key_sql("'cannot-run'", "''", "'agreement'", "reason", "tpl")
    template = template_sql("reason")
    derived = [k for (k,) in con.execute(
        f"SELECT {key} FROM (SELECT reason, {template} AS tpl FROM t)").fetchall()]
    recorded = [failure_facts(failure_cause(path, error)[1], error)[1]
                for path, error in errors.items()]
    assert derived == recorded
    assert recorded[0] == error_key(root_cause(TRACT_ERROR)) == (
        "error:TractError: OP does not support T")
    assert recorded[3] == "unsupported-op:ai.onnx::Erf"


def test_the_blamed_column_reads_the_recorded_failed_path() -> None:
    """A failure whose recorded path is the reference blames it, whatever its sentence says;
    a row recorded before the facts (NULL) is read from its sentence, the variant file aside."""
    con = duckdb.connect()
    rows = [("recorded", "onnx-reference", "a sentence naming no path"),
            ("old", None, "fp16:tract-optimized failed: boom"),
            ("old-reference", None, "onnx-reference failed: boom")]
    con.execute("CREATE TABLE obs (observation_id VARCHAR, failed_path VARCHAR, "
                "reason VARCHAR)")
    con.executemany("INSERT INTO obs VALUES (?, ?, ?)", rows)
    got = dict(con.execute(f"""SELECT observation_id, {BLAMED_SQL} FROM (
        SELECT *, 'execution' AS result, 'analytic' AS "check", 'tract' AS backend,
               'optimized' AS optimization, 'onnx-reference' AS reference, '-' AS arbiter
        FROM obs)""").fetchall())
    assert got["recorded"] == got["old-reference"] != got["old"]
    assert "tract" in got["old"] and "reference" in got["recorded"].lower()


def _as_previous_release(new: Path, old: Path) -> None:
    """The run of ``new`` as a gero before schema version 3 wrote it: no facts columns (nor
    the kind, version 4's)."""
    (run,) = (new / "runs").iterdir()
    target = old / "runs" / run.name
    target.mkdir(parents=True)
    table = pq.read_table(run / "observations.parquet")
    schema = pa.schema([f for f in OBSERVATION_SCHEMA if f.name not in FACT_NAMES],
                       metadata={"gero.schema_version": "2"})
    pq.write_table(table.drop_columns(list(FACT_NAMES)).select(schema.names).cast(schema),
                   target / "observations.parquet")
    (target / "run.json").write_text((run / "run.json").read_text())


@pytest.mark.slow
def test_a_run_of_the_previous_release_gives_the_same_findings(tmp_path: Path) -> None:
    """tract has no float64 Abs: its failures record the path, the root cause and the kind
    the findings derive for a row without it, the title
    quotes the types the template masked ("OP does not support T"), and the same run written
    without the facts reads on with the same findings."""
    pytest.importorskip("tract", reason="tract is not installed (pip install 'gero[tract]')")
    new, old = tmp_path / "new", tmp_path / "old"
    out = gero("run", "--ops", "Abs", "--dtypes", "float64", "--backends", "tract",
               "--no-contracts", "--jobs", "1", "--repeats", "1", "--data-dir", str(new))
    assert out.returncode == 1, out.stderr
    facts = open_run(new).query("SELECT DISTINCT failed_path, cause FROM obs "
                                "WHERE result = 'execution'")
    assert sorted(facts) == [("tract-optimized", "TractError: Abs does not support F64"),
                             ("tract-unoptimized", "TractError: Abs does not support F64")]
    _as_previous_release(new, old)
    assert open_run(new).query("SELECT DISTINCT failure_kind, cause_key, scope FROM obs "
                               "WHERE result = 'execution'") == [
        ("cannot-run", "error:TractError: OP does not support T", "graph")]
    assert open_run(old).query("SELECT DISTINCT failed_path, cause, failure_kind, scope, "
                               "cause_key FROM obs") == [(None, None, None, None, None)]
    listed = []
    for root in (new, old):
        out = gero("findings", "--data-dir", str(root), "--format", "json")
        assert out.returncode == 1, out.stderr
        listed.append([(f["finding_id"], f["observations"], f["title"])
                       for f in json.loads(out.stdout)["findings"]])
    assert listed[0] == listed[1]
    (finding,) = listed[0]
    assert finding[2].endswith("TractError: Abs does not support F64"), finding


def test_a_file_of_schema_4_reads_the_facts_of_schema_5_as_null(tmp_path: Path) -> None:
    """A run the previous release wrote (schema 4: no scope, cause_key, note, figures) opens,
    and the new columns read as NULL, for the findings to derive once."""
    row: dict[str, Any] = {c.name: None for c in OBSERVATION_SCHEMA}
    row.update(observation_id="a" * 64, run_id="old", suite="synthetic", case_id="c",
               result="execution", reason="tract-optimized failed: boom",
               failed_path="tract-optimized", cause="boom", failure_kind="law:PATH failed: boom")
    new_names = ("scope", "cause_key", "note", "figures")
    schema = pa.schema([f for f in OBSERVATION_SCHEMA if f.name not in new_names],
                       metadata={"gero.schema_version": "4"})
    run = tmp_path / "runs" / "old"
    run.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([{k: row[k] for k in schema.names}], schema=schema),
                   run / "observations.parquet")
    (run / "run.json").write_text(json.dumps({"run_id": "old", "status": "complete"}))
    got = open_run(tmp_path).query(
        "SELECT failed_path, failure_kind, scope, cause_key, note, figures FROM obs")
    assert got == [("tract-optimized", "law:PATH failed: boom",
                    None, None, None, None)]


# The real messages of each runtime on a one-node graph with an operator it lacks
# (ai.onnx.ml Scaler for OpenVINO and tract, com.microsoft FooBar for the others), as
# OpenVINO 2025, ONNX Runtime 1.2x, tract 0.21 and onnx 1.1x print them.
_LACKS = {
    "openvino": ("Check 'false' failed at src/frontends/common_translators/src/unconverted_"
                 "ops_report.cpp:151:\nFrontEnd API failed with OpConversionFailure:\nModel "
                 "wasn't fully converted.\nSummary:\n-- No conversion rule found for "
                 "operations: ai.onnx.ml.Scaler\nTo facilitate the conversion of unsupported "
                 "operations, refer to Frontend Extension documentation: https://docs.openvino"
                 ".ai/latest/openvino_docs_Extensibility_UG_Frontend_Extensions.html",
                 "unsupported-op:ai.onnx.ml::Scaler"),
    "openvino-older": ("OpConversionFailure: for ONNX op 'ai.onnx.ml.Scaler'",
                       "unsupported-op:ai.onnx.ml::Scaler"),
    "tract": ('TractError: Translating node #1 "y" Unimplemented(Scaler) ToTypedTranslator\n\n'
              "Caused by:\n    Operator can not be made a TypedOp.",
              "unsupported-op:ai.onnx.ml::Scaler"),
    "ort-kernel": ("NotImplemented: [ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find "
                   "an implementation for Abs(13) node with name 'n'",
                   "unsupported-op:ai.onnx::Abs"),
    "ort-op": ("Fail: [ONNXRuntimeError] : 1 : FAIL : Fatal error: com.microsoft:FooBar(-1) "
               "is not a registered function/op", "unsupported-op:com.microsoft::FooBar"),
    "reference": ("NotImplementedError: Node type 'DynamicQuantizeLSTM' from domain "
                  "'com.microsoft' is unknown, known functions: [].",
                  "unsupported-op:com.microsoft::DynamicQuantizeLSTM"),
    "reference-schema": ("No registered schema for operator 'FooBar' and domain ''.",
                         "unsupported-op:ai.onnx::FooBar"),
    # an opset it has no version of (issue 40: tashkeel's opset-17 DequantizeLinear was
    # keyed by its masked error, another finding than the float64 shadow's)
    "reference-version": ("RuntimeError: No implementation for operator 'DequantizeLinear' "
                          "domain '' and version 17, found 19, 21, 23, 25, None.",
                          "unsupported-op:ai.onnx::DequantizeLinear"),
}


@pytest.mark.parametrize("runtime", sorted(_LACKS))
def test_a_runtime_lacking_an_operator_is_keyed_by_it(runtime: str) -> None:
    message, key = _LACKS[runtime]
    assert unsupported_op(message, {"Scaler": "ai.onnx.ml"}) == key
    assert failure_facts(root_cause(message), message, {"Scaler": "ai.onnx.ml"}) == (
        CANNOT_RUN, key)


def test_a_failure_without_a_known_cause_is_keyed_by_its_masked_error() -> None:
    assert failure_facts(root_cause(TRACT_ERROR), TRACT_ERROR) == (
        CANNOT_RUN, "error:TractError: OP does not support T")
    assert failure_facts("ran out of its 60 s budget") == (OUT_OF_BUDGET, "")


def test_the_scope_and_law_come_from_the_check() -> None:
    assert scope_of("model", "model:int8-static:cosine") == "int8-static"
    assert scope_of("model", "model:fp32") == scope_of("models", "agreement") == "model"
    assert scope_of("synthetic", "contract:masked_rows") == "graph"
    assert law_name("contract:masked_rows") == "law:masked_rows"
    assert law_name("model:fp16:scaled") == "law:scaled"


def test_a_models_own_per_tensor_dynamic_quantisation_is_found_in_its_graph() -> None:
    """Issue 40 item 8: DynamicQuantizeLinear's one scale spans the batch; a batch law it
    breaks is keyed ``model-quantization`` (``batch.SPANS_BATCH``), not a runtime's."""
    from onnx import TensorProto, helper

    from gero_runner.checks.contracts.batch import SPANS_BATCH, per_tensor_dynamic_quantization

    def graph(op: str, outputs: list[str]) -> bytes:
        node = helper.make_node(op, ["x"], outputs)
        g = helper.make_graph([node], "g", [helper.make_tensor_value_info(
            "x", TensorProto.FLOAT, [2, 3])], [helper.make_tensor_value_info(
                name, TensorProto.FLOAT, None) for name in outputs])
        return helper.make_model(g).SerializeToString()

    assert per_tensor_dynamic_quantization(graph("DynamicQuantizeLinear", ["y", "s", "z"]))
    assert not per_tensor_dynamic_quantization(graph("Relu", ["y"]))
    assert SPANS_BATCH == ("partition", "duplication")


def test_every_row_builder_records_typed_facts_never_a_sentence() -> None:
    """``CaseContext.row`` (every check's rows, a parity comparison's, a failed path's, a
    crashed worker's) records a kind of the typed vocabulary, the scope and the figures."""
    from gero_runner.execution.context import CaseContext, PathResult, RunSettings
    from gero_runner.execution.evaluate import execution_rows
    from gero_runner.run import RunRequest, collect_cases
    from gero_runner.storage.artifacts import EvidenceWriter

    (case, *_) = collect_cases(RunRequest(ops=["Exp"], dtypes=["float32"]))
    ctx = CaseContext(case, RunSettings(data_root=""), EvidenceWriter(), {}, ["y"], "g", "i")
    path = PathResult("ort-all", "onnxruntime", "1", "all", 1, {"level": "all"})
    cmp = compare(np.array([1.0, 2.0], np.float32), np.array([1.0, 3.0], np.float32),
                  1e-5, 1e-6)
    common: dict[str, Any] = {"output_name": "y", "actual": path, "reference_name": "r",
                              "reference_version": "1", "dtype": "float32", "rtol": 1e-5,
                              "atol": 1e-6}
    parity = ctx.row(check="expected", cmp=cmp, result="divergence",
                     reason="1 of 2 elements outside atol", **common)
    gate = ctx.row(check="model:fp16:scaled", cmp=cmp, result="divergence",
                   reason="scaled error 0.3 > 0.1", **common)
    failed = ctx.row(check="agreement", cmp=None, result="execution",
                     reason="ort-all failed: boom", failed_path="ort-all", cause="boom",
                     error="ran out of its 60 s budget", **common)
    (crash,) = execution_rows(case, "worker process crashed with SIGSEGV")
    assert (parity.failure_kind, parity.scope) == ("outside", "graph")
    assert json.loads(parity.figures) == {"mismatches": 1, "elements": 2, "max_abs_error": 1.0}
    assert (gate.failure_kind, gate.scope) == ("law:scaled", "fp16")
    assert failed.failure_kind == CANNOT_RUN and failed.cause_key == "error:boom"
    assert crash.failure_kind == CANNOT_RUN and crash.scope == "graph"
    assert crash.cause_key.startswith("error:")


def test_an_output_gero_does_not_compare_is_geros_tooling_not_a_failure() -> None:
    """Issue 40 item 10: logreg_iris's seq(map) output, which ONNX Runtime computed: the row
    saying gero compares tensor outputs only is gero's tooling, never the runtime's
    'cannot-run': a passed row whose note is the sentence (notes change no count)."""
    from gero_runner.execution.context import CaseContext, PathResult, RunSettings
    from gero_runner.facts import OUTPUTS_CHECK
    from gero_runner.run import RunRequest, collect_cases
    from gero_runner.storage.artifacts import EvidenceWriter

    (case, *_) = collect_cases(RunRequest(ops=["Exp"], dtypes=["float32"]))
    ctx = CaseContext(case, RunSettings(data_root=""), EvidenceWriter(), {}, ["y"], "g", "i")
    path = PathResult("ort-all", "onnxruntime", "1", "all", 1, {"level": "all"})
    row = ctx.row(check=OUTPUTS_CHECK, output_name="probabilities", actual=path,
                  reference_name="-", reference_version="", dtype="float32", cmp=None,
                  rtol=0.0, atol=0.0, result="execution",
                  reason="output 'probabilities' is seq(map(int64,tensor(float32))), not a "
                  "tensor: gero compares tensor outputs only, so this one is not compared")
    assert (row.result, row.failure_kind, row.cause_key) == ("passed", "", "")
    assert row.note == row.reason and "gero compares tensor outputs only" in row.note

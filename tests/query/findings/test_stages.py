"""Each stage of the findings' grouping, run alone on tables of hand-made rows named like the
stages it reads (``members.stages``), and the stages composed on a hand-made ``obs``."""

from __future__ import annotations

import re
from typing import Any

import duckdb
import pyarrow as pa

from gero.query.findings import NAN_TEMPLATE, NONFINITE, OUTSIDE, VARIANT_TOOLING, members_sql
from gero.query.findings.members import stages


def run_stage(name: str, **inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of stage ``name`` over the hand-made tables ``inputs`` (``obs`` for the
    observations), sorted for a stable comparison."""
    con = duckdb.connect()
    for table, rows in inputs.items():
        con.register(table, pa.Table.from_pylist(rows))
    cur = con.execute(dict(stages("obs"))[name])
    columns = [d[0] for d in cur.description or ()]
    return sorted((dict(zip(columns, r, strict=True)) for r in cur.fetchall()), key=repr)


def obs(**kw: Any) -> dict[str, Any]:
    """An observation with the columns the stages read (an agreement row that passed; its
    kind not recorded, as a gero before schema 4 wrote it: the stages derive it)."""
    row: dict[str, Any] = {
        "observation_id": "o1", "case_id": "c1", "op_type": "Softmax", "dtype": "float32",
        "check": "agreement", "suite": "synthetic", "details": "", "backend": "onnxruntime",
        "optimization": "all", "reference": "onnx-reference", "arbiter": "reference",
        "max_abs_error": 0.0, "result": "passed", "reason": "", "session_settings": "{}",
        "nan_actual": 0, "nan_reference": 0, "mismatch_count": 0, "failed_path": "",
        "failure_kind": None, "cause_key": None, "scope": None, "cause": None}
    return {**row, **kw}


def raw(**kw: Any) -> dict[str, Any]:
    """A row of ``raw``: ONNX Runtime at ``all`` off on an agreement row, float64 siding
    with the reference."""
    row: dict[str, Any] = {
        "observation_id": "o1", "case_id": "c1", "op_type": "Softmax", "dtype": "float32",
        "chk": "agreement", "optimization": "all", "result": "divergence", "seeded": False,
        "model_case": False, "backend": "onnxruntime", "path": "onnxruntime@all",
        "reference": "onnx-reference", "arbiter": "reference", "max_abs_error": 0.1,
        "reason": "r", "precision": None, "family": "numeric", "truth": False,
        "severity": 2, "why": "", "failed_path": "", "failure_kind": None,
        "recorded_key": None, "old": True, "scope": "graph", "cause": ""}
    return {**row, **kw}


def fact(**kw: Any) -> dict[str, Any]:
    """A row of ``facts``: ``raw``'s with its kind and cause key, without its reason."""
    row = {**raw(), "kind": "outside", "cause_key": "", **kw}
    for name in ("reason", "failure_kind", "recorded_key"):
        row.pop(name)
    return row


def template(reason: str = "r", kind: str = "outside", text: str = OUTSIDE) -> dict[str, Any]:
    return {"reason": reason, "template": text, "kind": kind}


def test_the_stages_run_in_order_each_reading_only_those_above_it() -> None:
    chain = stages("obs")
    names = [name for name, _ in chain]
    assert len(names) == len(set(names)) == 21
    for i, (name, sql) in enumerate(chain):
        read = set(re.findall(r"\b(?:FROM|JOIN)\s+([a-z_]+)\b(?!\.)", sql))
        assert read, name
        assert read <= {*names[:i], "obs"}, (name, read - {*names[:i], "obs"})
    composed = members_sql("obs")
    assert re.findall(r"(?m)^(?:WITH )?([a-z_]+) AS (?:MATERIALIZED )?\(", composed) == names


def test_raw_keeps_the_non_passed_rows_with_their_path_family_and_seeding() -> None:
    rows = run_stage("raw", obs=[
        obs(observation_id="passed"),
        obs(observation_id="agree", result="divergence", reason="off"),
        obs(observation_id="fail", result="execution", backend="tract", optimization="-",
            check="contract:partition", reason="tract failed: boom"),
        obs(observation_id="law", result="contract_issue", check="contract:masked_rows",
            reason="masked_rows: fully masked row not exactly zero"),
        obs(observation_id="seeded", suite="model", details="x (default)",
            result="divergence", reason="off", check="model:fp32",
            session_settings='{"inference_precision": "f32"}'),
        # the path a failure names is a fact recorded beside its sentence (schema 3) ...
        obs(observation_id="recorded", result="execution", failed_path="onnx-reference",
            reason="a sentence naming no path"),
        # ... and read from the sentence for a row of a gero before it (NULL)
        obs(observation_id="old", result="execution", failed_path=None,
            reason="fp16:tract-optimized failed: TractError: Impossible to unify U8 with I8")])
    by_id = {r["observation_id"]: r for r in rows}
    assert set(by_id) == {"agree", "fail", "law", "seeded", "recorded", "old"}
    assert by_id["recorded"]["failed_path"] == "onnx-reference"
    assert by_id["old"]["failed_path"] == "tract-optimized"
    assert (by_id["agree"]["path"], by_id["agree"]["family"]) == ("onnxruntime@all", "numeric")
    assert (by_id["fail"]["path"], by_id["fail"]["family"]) == ("tract", "execution")
    assert by_id["law"]["family"] == "contract:masked_rows"
    assert by_id["seeded"]["seeded"] and by_id["seeded"]["model_case"]
    assert by_id["seeded"]["precision"] == "f32" and not by_id["agree"]["seeded"]
    assert by_id["agree"]["severity"] > by_id["fail"]["severity"]
    # a row of a gero before schema 5 (no scope) is ``old``: its facts are derived once
    assert by_id["agree"]["old"] and by_id["agree"]["scope"] == "graph"
    assert by_id["seeded"]["scope"] == "model"


def test_a_reason_becomes_a_template_and_a_kind() -> None:
    reasons = {
        "nan": "NaN on both sides at 4 of 32 elements (NaN == NaN never passes); the other "
               "elements within tolerance (max |a−r| = 0)",
        "outside": "57 of 64 elements outside atol=1e-13 + rtol=1e-12·|r|; max |a−r| = 0.00446",
        "variant": "variant sigmoid_decomposed: 12 of 64 elements outside atol=0.0005",
        "nonfinite": "actual is NaN at 3 of 8 elements where the reference is finite",
        "defect": "known upstream defect erf-float32-rounding — the batch's rows",
        "law": "masked_rows: fully masked row not exactly zero (row 3 of 4)",
        "failure": "ort-all failed: NotImplemented: Could not find an implementation for "
                   "Erf(13) node with name 'n1'",
        "on-file": "fp16:tract-optimized failed: TractError: Impossible to unify U8 with I8",
    }
    got = run_stage("reasons", raw=[raw(reason=r) for r in reasons.values()])
    templates = {r["reason"]: r for r in got}
    failure = templates[reasons["failure"]]
    assert failure["template"] == ("PATH failed: NotImplemented: Could not find an "
                                   "implementation for OP(#) node with name '…'")
    assert templates[reasons["on-file"]]["template"].endswith("unify T with T")
    kinds = {r["reason"]: r["kind"] for r in run_stage("templates", reasons=got)}
    # a failure is grouped by its template (``grouped``'s ``sub``), not by its kind
    assert {name: kinds[reason] for name, reason in reasons.items()
            if name not in ("failure", "on-file")} == {
        "nan": "nan", "outside": "outside", "variant": "outside",
        "nonfinite": "nonfinite:actual", "defect": "defect:known upstream defect "
        "erf-float32-rounding", "law": "law:fully masked row not exactly zero"}


def test_a_recorded_kind_is_read_and_only_an_older_rows_derived() -> None:
    """A row of schema 5 records its facts: ``facts`` takes its kind and cause key as they
    are, and derives the typed ones, once, only for a row a gero before wrote (``old``):
    its schema-4 kind (a masked sentence) or its reason read by
    ``gero_runner.storage.derivation``."""
    outside = "57 of 64 elements outside atol=1e-13 + rtol=1e-12·|r|"
    lacks = ("openvino failed: RuntimeError: Check 'false' failed\n-- No conversion rule "
             "found for operations: ai.onnx.ml.Scaler\nTo facilitate the conversion of "
             "unsupported operations, refer to Frontend Extension documentation")
    budget = "tract-optimized failed: ran out of its 60 s budget"
    failed = {"result": "execution", "family": "execution"}
    raws = [raw(observation_id="recorded", reason=outside, failure_kind="law:masked_rows",
                recorded_key="", old=False),
            raw(observation_id="schema-4", reason="masked_rows: row 3 not zero",
                chk="contract:masked_rows", failure_kind="law:row # not zero"),
            raw(observation_id="nonfinite-law", chk="contract:probability_extreme",
                reason="probability_extreme: 7 non-finite value(s) (NaN 7, inf 0)"),
            raw(observation_id="nan-in-masked", chk="contract:masked_rows",
                reason="masked_rows: 1 of 1 fully masked row(s) not exactly zero (NaN in 12 "
                       "of 12 masked cells)"),
            raw(observation_id="older", reason=outside + "; max |a−r| = 0.1"),
            raw(observation_id="lacks", reason=lacks, **failed),
            raw(observation_id="budget", reason=budget, **failed),
            raw(observation_id="defect", reason="known upstream defect erf-x — off"),
            raw(observation_id="tract", reason="tract-optimized failed: TractError: "
                "Evaluating #1 \"Y\" Abs\n\nCaused by:\n    1: Abs does not support F64",
                **failed),
            # gero's float64 shadow, recorded 'cannot-run' by a gero before its tooling kind
            # (H6's tashkeel run): gero's own yardstick, never a path's failure
            raw(observation_id="shadow", backend="float64-shadow", old=False,
                failure_kind="cannot-run", recorded_key="error:the float64 shadow could not",
                cause="the float64 shadow could not run: boom", **failed),
            raw(observation_id="yardstick", backend="float64-shadow", old=False,
                failure_kind="cannot-run", recorded_key="error:the fp16 yardstick",
                cause="the fp16 yardstick (…) could not run on the fp16 file: boom", **failed)]
    templates = run_stage("templates", reasons=run_stage("reasons", raw=raws))
    assert outside not in {t["reason"] for t in templates}  # recorded: not read
    got = {r["observation_id"]: (r["kind"], r["cause_key"])
           for r in run_stage("facts", raw=raws, templates=templates)}
    assert got == {
        "recorded": ("law:masked_rows", ""), "schema-4": ("law:masked_rows", ""),
        "nonfinite-law": ("law:probability_extreme:nonfinite", ""),
        "nan-in-masked": ("law:masked_rows:nonfinite", ""),
        "older": ("outside", ""),
        "lacks": ("cannot-run", "unsupported-op:ai.onnx.ml::Scaler"),
        "budget": ("out-of-budget", "tooling:budget"), "defect": ("defect", "defect:erf-x"),
        "tract": ("cannot-run", "error:TractError: OP does not support T"),
        "shadow": ("tooling", "tooling:shadow"),
        "yardstick": ("tooling", "tooling:fp16-yardstick")}


def _blamed(*rows: dict[str, Any]) -> dict[str, str]:
    return {r["observation_id"]: r["blamed"] for r in run_stage("rows", facts=list(rows))}


def test_a_row_is_blamed_on_its_reference_when_float64_sides_with_the_actual() -> None:
    assert _blamed(
        fact(observation_id="actual", arbiter="actual"),
        fact(observation_id="own", arbiter="reference"),
        fact(observation_id="level", chk="levels", arbiter="actual",
             reference="onnxruntime:disable_all"),
        fact(observation_id="corrected", arbiter="actual",
             reference="onnx-reference-corrected"),
        fact(observation_id="tie", arbiter="tie"),
        fact(observation_id="nan-tie", arbiter="tie", kind="nan"),
    ) == {"actual": "onnx-reference", "own": "onnxruntime@all",
          "level": "onnxruntime@disable_all", "corrected": "onnx-reference",
          "tie": "undecided", "nan-tie": "onnxruntime@all"}


def test_an_execution_row_naming_another_path_blames_that_path() -> None:
    failed = {"result": "execution", "family": "execution", "arbiter": "-",
              "kind": "cannot-run"}
    assert _blamed(
        fact(observation_id="reference", failed_path="onnx-reference", **failed),
        fact(observation_id="own", failed_path="ort-all", **failed),
        fact(observation_id="own-spelled", failed_path="onnxruntime-all", **failed),
        fact(observation_id="tooling", **{**failed, "kind": "tooling"},
             cause_key="tooling:variant-build"),
    ) == {"reference": "onnx-reference", "own": "onnxruntime@all",
          "own-spelled": "onnxruntime@all", "tooling": VARIANT_TOOLING}


def test_an_undecided_row_blames_the_reference_float64_blames_or_the_pair() -> None:
    undecided = {"blamed": "undecided", "template": OUTSIDE, "failed_path": "",
                 "kind": "outside", "arbiter": "tie"}
    rows = [raw(observation_id="o", case_id="c1", **undecided),
            raw(observation_id="t", case_id="c1", chk="analytic", truth=True,
                backend="onnx", path="onnx-reference", blamed="onnx-reference",
                template=OUTSIDE, failed_path="", kind="outside"),
            raw(observation_id="pair", case_id="m1", model_case=True, backend="openvino",
                path="openvino@f32", reference="onnxruntime:all", **undecided),
            raw(observation_id="own", case_id="c2", **undecided)]
    for r in rows:
        r.pop("reason")
    got = run_stage("decided", rows=rows, obs=[
        obs(case_id="c1", check="analytic"), obs(case_id="m1"), obs(case_id="c2")])
    assert {r["observation_id"]: r["blamed"] for r in got} == {
        "o": "onnx-reference", "t": "onnx-reference", "pair": "onnxruntime vs openvino",
        "own": "onnxruntime@all"}


def test_a_nan_only_row_is_one_cause_on_every_path() -> None:
    decided = [raw(observation_id=p, path=f"onnxruntime@{p}", blamed=f"onnxruntime@{p}",
                   kind="nan", cause_key="") for p in ("basic", "all")]
    runtime_rows = run_stage("runtime_rows", decided=decided)
    assert {(r["runtime"], r["fam0"]) for r in runtime_rows} == {("onnxruntime", "nan")}
    blamed = [{**r, "fam": r["fam0"]} for r in runtime_rows]
    grouped = run_stage("grouped", blamed=blamed,
                        everyone=[{"case_id": "c1", "fam0": "numeric", "every_path": False}])
    assert {(r["grp"], r["sub"]) for r in grouped} == {("every path", "")}
    labelled = [{"case_id": "c1", "fam": "nan", "grp": "every path", "sub": "",
                 "outlier": "every path", "own_path": True, "precision": None,
                 "kind": "nan", "cause_key": "", "model_case": False, "dtype": "float32",
                 "op_type": "Softmax"}]
    keyed = run_stage("keyed", labelled=labelled)
    signed = run_stage("signed", keyed=keyed)
    assert [(r["family"], r["template"], r["operator_key"]) for r in signed] == [
        ("nan", NAN_TEMPLATE, "*")]


def _runtime_row(case: str, path: str, kind: str = "outside") -> dict[str, Any]:
    return {"case_id": case, "fam0": "numeric", "runtime": path.split("@")[0],
            "blamed": path, "path": path, "kind": kind, "precision": None,
            "dtype": "float32", "cause_key": ""}


def _runtimes(case: str, *paths: str) -> list[dict[str, Any]]:
    by_runtime: dict[str, list[str]] = {}
    for p in paths:
        by_runtime.setdefault(p.split("@")[0], []).append(p)
    return [{"case_id": case, "fam": "numeric", "runtime": r, "settings": s}
            for r, s in by_runtime.items()]


def test_every_path_when_every_setting_of_every_runtime_is_off_the_same_way() -> None:
    rows = [_runtime_row("all-off", "onnxruntime@basic"),
            _runtime_row("all-off", "onnxruntime@all"), _runtime_row("all-off", "openvino"),
            # ORT's disable_all ran and passed: not every path
            _runtime_row("one-level-passes", "onnxruntime@all"),
            _runtime_row("one-level-passes", "openvino"),
            # off in different kinds: two causes
            _runtime_row("two-kinds", "onnxruntime@all"),
            _runtime_row("two-kinds", "openvino", "law:cosine below"),
            _runtime_row("alone", "openvino")]
    runtimes = [*_runtimes("all-off", "onnxruntime@basic", "onnxruntime@all", "openvino"),
                *_runtimes("one-level-passes", "onnxruntime@disable_all", "onnxruntime@all",
                           "openvino"),
                *_runtimes("two-kinds", "onnxruntime@all", "openvino"),
                *_runtimes("alone", "openvino")]
    kind_sets = run_stage("kind_sets", runtime_rows=rows)
    assert {r["case_id"]: r["sets"] for r in kind_sets} == {
        "all-off": 1, "one-level-passes": 1, "two-kinds": 2, "alone": 1}
    everyone = run_stage("everyone", runtime_rows=rows, runtimes=runtimes,
                         kind_sets=kind_sets)
    assert {r["case_id"]: r["every_path"] for r in everyone} == {
        "all-off": True, "one-level-passes": False, "two-kinds": False, "alone": False}


def test_an_outlier_names_the_settings_that_are_off_in_level_order() -> None:
    groups = [{"case_id": "some", "fam": "numeric", "grp": "onnxruntime", "sub": "",
               "bad_settings": ["onnxruntime@all", "onnxruntime@extended"]},
              {"case_id": "every", "fam": "numeric", "grp": "onnxruntime", "sub": "",
               "bad_settings": ["onnxruntime@all", "onnxruntime@basic"]},
              {"case_id": "any", "fam": "numeric", "grp": "every path", "sub": "",
               "bad_settings": ["onnxruntime@all"]}]
    runtimes = [*_runtimes("some", "onnxruntime@basic", "onnxruntime@extended",
                           "onnxruntime@all"),
                *_runtimes("every", "onnxruntime@basic", "onnxruntime@all")]
    got = run_stage("labelled", groups=groups, runtimes=runtimes)
    assert {r["case_id"]: r["outlier"] for r in got} == {
        "some": "onnxruntime@extended,all", "every": "onnxruntime", "any": "every path"}


def test_a_law_broken_by_a_runtime_already_off_joins_its_numeric_finding() -> None:
    rows = [{**_runtime_row("c1", "tract"), "fam0": "numeric", "chk": "agreement"},
            {**_runtime_row("c1", "tract"), "fam0": "contract:masked_rows",
             "chk": "contract:masked_rows"},
            {**_runtime_row("c1", "openvino"), "fam0": "contract:masked_rows",
             "chk": "contract:masked_rows"},
            {**_runtime_row("m1", "tract"), "fam0": "model:fp16:scaled",
             "chk": "model:fp16:scaled"},
            {**_runtime_row("m1", "tract"), "fam0": "model:fp16:vs-model",
             "chk": "model:fp16:vs-model"}]
    got = run_stage("blamed", runtime_rows=rows,
                    everyone=[{"case_id": "c1", "fam0": "contract:masked_rows",
                               "every_path": False}],
                    off=[{"case_id": "c1", "runtime": "tract", "lower": False},
                         {"case_id": "m1", "runtime": "tract", "lower": False}],
                    off_on_file=run_stage("off_on_file", runtime_rows=rows))
    assert sorted((r["case_id"], r["runtime"], r["chk"], r["fam"]) for r in got) == [
        ("c1", "openvino", "contract:masked_rows", "contract:masked_rows"),
        ("c1", "tract", "agreement", "numeric"),
        ("c1", "tract", "contract:masked_rows", "numeric"),
        ("m1", "tract", "model:fp16:scaled", "model:fp16:scaled"),
        ("m1", "tract", "model:fp16:vs-model", "model:fp16:scaled")]


def test_a_runtime_computing_in_fewer_bits_is_a_precision_finding_across_operators() -> None:
    labelled = [{"case_id": c, "fam": "numeric", "grp": "openvino", "sub": "",
                 "outlier": "openvino", "own_path": True, "precision": "f32",
                 "kind": "outside", "cause_key": "", "model_case": False, "dtype": dtype,
                 "op_type": op}
                for c, dtype, op in (("c1", "float64", "Abs"), ("c2", "float32", "Add"))]
    signed = run_stage("signed", keyed=run_stage("keyed", labelled=labelled))
    assert sorted((r["family"], r["template"], r["operator_key"]) for r in signed) == [
        ("numeric", OUTSIDE, "Add"), ("precision", "computes float64 in f32", "*float64")]


def test_the_stages_composed_group_a_case_where_float64_sides_with_the_actual() -> None:
    """Through the composed SQL on hand-made observations: the ReferenceEvaluator is the
    outlier of an agreement row float64 sides the actual with, one finding per cause."""
    con = duckdb.connect()
    off = "3 of 8 elements outside atol=1e-05 + rtol=0.0001·|r|; max |a−r| = 0.01"
    con.register("obs", pa.Table.from_pylist([
        obs(observation_id=f"o-{opt}", optimization=opt, result="divergence",
            arbiter="actual", reason=off) for opt in ("basic", "all")] + [
        obs(observation_id="analytic", check="analytic", backend="onnx-reference",
            optimization="-",
            reference="numpy-float64", result="divergence", reason=off, arbiter="-")]))
    cur = con.execute(members_sql("obs"))
    columns = [d[0] for d in cur.description or ()]
    members = [dict(zip(columns, r, strict=True)) for r in cur.fetchall()]
    assert {(m["observation_id"], m["outlier"], m["family"], m["template"])
            for m in members} == {
        ("o-basic", "onnx-reference", "numeric", OUTSIDE),
        ("o-all", "onnx-reference", "numeric", OUTSIDE),
        ("analytic", "onnx-reference", "numeric", OUTSIDE)}
    assert len({m["finding_id"] for m in members}) == 1
    through = con.execute(members_sql("obs", through="decided")).fetchall()
    assert len(through) == 3


def _failure(oid: str, scope: str, key: str, *, case: str = "m1", runtime: str = "openvino",
             model_case: bool = True, kind: str = "cannot-run") -> dict[str, Any]:
    """A row of ``blamed``: a path of ``runtime`` that failed, with its recorded facts."""
    return {**fact(observation_id=oid, case_id=case, result="execution", family="execution",
                   kind=kind, cause_key=key, scope=scope, model_case=model_case,
                   backend=runtime, path=runtime),
            "blamed": runtime, "runtime": runtime, "fam0": "execution", "fam": "execution"}


def test_a_runtime_that_cannot_run_the_model_is_one_group_with_its_variant_files() -> None:
    """Issue 40 items 6-7: OpenVINO lacks ai.onnx.ml.Scaler: its failures on the model and
    on the variant files (whose messages may name another operator first) are one group,
    keyed by the operator; the ReferenceEvaluator's lacking DynamicQuantizeLSTM on the
    model and two files, one; a graph case's missing kernels, one group across operators;
    a failure with its own cause on a file the model ran is a group of its own."""
    scaler = "unsupported-op:ai.onnx.ml::Scaler"
    lstm = "unsupported-op:com.microsoft::DynamicQuantizeLSTM"
    blamed = [
        _failure("model", "model", scaler),
        _failure("fp16", "fp16", "unsupported-op:com.microsoft::DynamicQuantizeMatMul"),
        _failure("int8", "int8-static", scaler),
        *(_failure(f"ref-{s}", s, lstm, runtime="onnx-reference")
          for s in ("model", "fp16", "int8-dynamic")),
        _failure("tract-file", "fp16", "error:TractError: boom", runtime="tract"),
        _failure("abs", "graph", "unsupported-op:ai.onnx::Abs", case="g1", model_case=False),
        _failure("erf", "graph", "unsupported-op:ai.onnx::Erf", case="g2", model_case=False)]
    got = {r["observation_id"]: (r["grp"], r["sub"])
           for r in run_stage("grouped", blamed=blamed, everyone=[
               {"case_id": "none", "fam0": "numeric", "every_path": False}])}
    assert got == {
        "model": ("openvino", scaler), "fp16": ("openvino", scaler),
        "int8": ("openvino", scaler),
        **{f"ref-{s}": ("onnx-reference", lstm) for s in ("model", "fp16", "int8-dynamic")},
        "tract-file": ("tract", "PATH failed: TractError: boom"),
        "abs": ("openvino", "unsupported-op"), "erf": ("openvino", "unsupported-op")}


def test_a_models_failure_is_keyed_by_its_model_a_graphs_across_operators() -> None:
    """One id never covers one runtime's failures on two models (their causes are the
    models'); a graph case's failure is one cause across operators (``*``)."""
    labelled = [{"case_id": c, "fam": "execution", "grp": "tract", "sub": "PATH failed: x",
                 "outlier": "tract", "own_path": True, "precision": None,
                 "kind": "cannot-run", "cause_key": "error:x", "model_case": model,
                 "dtype": "float32", "op_type": op}
                for c, model, op in (("m1", True, "molecule"), ("m2", True, "speaker"),
                                     ("g1", False, "Abs"), ("g2", False, "Erf"))]
    hashed = run_stage("hashed", signed=run_stage("signed", keyed=run_stage(
        "keyed", labelled=labelled)))
    ids = {r["case_id"]: r["finding_id"] for r in hashed}
    assert ids["m1"] != ids["m2"] and ids["g1"] == ids["g2"] != ids["m1"]


def test_a_batch_law_the_models_own_quantisation_breaks_is_the_models_on_every_runtime(
        ) -> None:
    """Issue 40 item 8: a partition law broken by the model's own DynamicQuantizeLinear (its
    scale spans the batch) is one group named after that cause, whichever runtimes broke it
    (so one id in every run), not 'every path' nor one per runtime."""
    blamed = [{**fact(observation_id=r, case_id="m1", chk="contract:partition",
                      family="contract:partition", kind="law:partition",
                      cause_key="model-quantization", scope="model", model_case=True,
                      backend=r, path=r),
               "blamed": r, "runtime": r, "fam0": "contract:partition",
               "fam": "contract:partition"} for r in ("onnxruntime", "openvino")]
    grouped = run_stage("grouped", blamed=blamed, everyone=[
        {"case_id": "m1", "fam0": "contract:partition", "every_path": True}])
    assert {(r["grp"], r["sub"]) for r in grouped} == {("model-quantization", "")}


def test_a_precision_rewrite_on_a_file_is_one_group_over_its_runtimes_and_gates() -> None:
    """Issue 40 D12: smart_turn's fp16 file one QuantizeLinear step off on ONNX Runtime and
    OpenVINO f32, on the scaled and vs-fp32 gates (4 findings), is one cause."""
    rows = [{**_runtime_row("m1", r), "fam0": f"model:fp16:{gate}", "chk": f"model:fp16:{gate}",
             "cause_key": "precision-rewrite"}
            for r in ("openvino@f32", "onnxruntime@all") for gate in ("scaled", "vs-fp32")]
    blamed = run_stage("blamed", runtime_rows=rows, everyone=[
        {"case_id": "m1", "fam0": "model:fp16:scaled", "every_path": True}],
        off=[{"case_id": "none", "runtime": "none", "lower": False}],
        off_on_file=run_stage("off_on_file", runtime_rows=rows))
    assert {r["fam"] for r in blamed} == {"model:fp16:precision"}
    grouped = run_stage("grouped", blamed=[{**r, "kind": "outside", "model_case": True,
                                            "scope": "fp16", "observation_id": str(i),
                                            "cause": ""} for i, r in enumerate(blamed)],
                        everyone=[{"case_id": "m1", "fam0": "model:fp16:scaled",
                                   "every_path": True}])
    assert {(r["grp"], r["sub"]) for r in grouped} == {("onnxruntime+openvino", "")}


def test_a_file_off_on_every_path_keeps_only_the_rows_no_cause_of_their_own_explains(
        ) -> None:
    """Issue 40 item 7: the int8-static file is off the fp32 model on every runtime, and
    OpenVINO also disagrees with the baseline on that file: OpenVINO's vs-model row is that
    disagreement's (its own cause), ONNX Runtime's stays the file's."""
    rows = [{**_runtime_row("m1", "openvino"), "fam0": "model:int8-static:cosine",
             "chk": "model:int8-static:cosine"},
            *({**_runtime_row("m1", r), "fam0": "model:int8-static:vs-model",
               "chk": "model:int8-static:vs-model"} for r in ("onnxruntime", "openvino"))]
    got = run_stage("blamed", runtime_rows=rows,
                    everyone=[{"case_id": "m1", "fam0": "model:int8-static:vs-model",
                               "every_path": True}],
                    off=[{"case_id": "none", "runtime": "none", "lower": False}],
                    off_on_file=run_stage("off_on_file", runtime_rows=rows))
    assert sorted((r["runtime"], r["chk"], r["fam"]) for r in got) == [
        ("onnxruntime", "model:int8-static:vs-model", "model:int8-static:vs-model"),
        ("openvino", "model:int8-static:cosine", "model:int8-static:cosine"),
        ("openvino", "model:int8-static:vs-model", "model:int8-static:cosine")]


def test_a_yardstick_failing_with_the_reference_evaluators_error_is_that_failure() -> None:
    """Issue 40 item 9 (logreg_iris): the ReferenceEvaluator's own path, the float64 shadow
    and the fp16 yardstick (which it computes) failing with one error are one group: the
    path's; a yardstick failing with an error of its own stays a group of its own."""
    error = "ValueError: operands could not be broadcast together with shapes (3,6) (3,)"
    key = "error:ValueError: operands could not be broadcast together with shapes (…) (…)"
    ref = {"cause": error}
    blamed = [
        {**_failure("ref", "model", key, runtime="onnx-reference"), **ref},
        {**_failure("ref-fp16", "fp16", key, runtime="onnx-reference"), **ref},
        {**_failure("shadow", "model", "tooling:shadow", runtime="float64-shadow",
                    kind="tooling"), "cause": f"the float64 shadow could not run: {error}"},
        {**_failure("yardstick", "fp16", "tooling:fp16-yardstick", runtime="float64-shadow",
                    kind="tooling"),
         "cause": "the fp16 yardstick (the float64 shadow rounded to float16 at each node) "
                  f"could not run on the fp16 file: {error}"},
        # its words recorded cut short (slanet's shadow: the evaluator's long TypeError)
        {**_failure("cut", "model", "tooling:shadow", runtime="float64-shadow",
                    kind="tooling"), "cause": f"the float64 shadow could not run: {error[:30]}"},
        {**_failure("own", "model", "tooling:shadow", runtime="float64-shadow", case="m2",
                    kind="tooling"), "cause": f"the float64 shadow could not run: {error}"}]
    got = {r["observation_id"]: (r["grp"], r["sub"])
           for r in run_stage("grouped", blamed=blamed, everyone=[
               {"case_id": "none", "fam0": "numeric", "every_path": False}])}
    path = ("onnx-reference", "PATH failed: " + key.removeprefix("error:"))
    assert got == {"ref": path, "ref-fp16": path, "shadow": path, "yardstick": path,
                   "cut": path,
                   "own": ("float64-shadow", "tooling:shadow")}


def test_an_output_gero_does_not_compare_blames_gero_not_the_runtime() -> None:
    """Issue 40 item 10: ONNX Runtime computed logreg_iris's seq(map) output; gero does not
    compare it: its limit, not ONNX Runtime's failure (a row of this release, and one a
    gero before recorded as ONNX Runtime's failure)."""
    failed = {"result": "execution", "family": "execution", "arbiter": "-",
              "chk": "model:outputs", "failed_path": ""}
    assert _blamed(
        fact(observation_id="new", kind="tooling", cause_key="tooling:tensor-outputs",
             **failed),
        fact(observation_id="old", kind="cannot-run", cause_key="error:output '…' is seq",
             **failed)) == {"new": "gero", "old": "gero"}


def test_a_runtimes_setting_in_fewer_bits_is_a_precision_finding_apart_from_its_others(
        ) -> None:
    """Issue 40 (verify40b D5, tashkeel): OpenVINO at bf16-default off (a levels row against
    its f32 setting, a model:fp32 row against float64) and OpenVINO at f32 off from float64
    on its own (9.46x further than ONNX Runtime) are two causes: the precision family takes
    the bf16 setting's rows only; the f32 setting's row is its own model:fp32 finding (the
    bf16 setting being off does not make OpenVINO 'already off' for its f32 law)."""
    def row(oid: str, setting: str, chk: str, kind: str, fam: str) -> dict[str, Any]:
        path = f"openvino@{setting}"
        return {**fact(observation_id=oid, case_id="m1", chk=chk, kind=kind, family=fam,
                       model_case=True, scope="model", backend="openvino",
                       optimization=setting, path=path, op_type="model",
                       precision=setting.removesuffix("-default")),
                "blamed": path, "runtime": "openvino", "fam0": fam}
    file = "model:int8-static:cosine"
    rows = [row("levels", "bf16-default", "levels", "law:levels", "numeric"),
            row("bf16-fp32", "bf16-default", "model:fp32", "law:fp32", "model:fp32"),
            row("f32-fp32", "f32", "model:fp32", "law:fp32", "model:fp32")]
    # on a variant file both settings off are one fault (OpenVINO's int8-static rounding)
    on_file = [row(f"{s}-file", s, file, "law:cosine", file) for s in ("bf16-default", "f32")]
    runtimes = [{**r, "fam": fam} for r in _runtimes("m1", "openvino@bf16-default",
                                                      "openvino@f32")
                for fam in ("numeric", "model:fp32")]
    kind_sets = run_stage("kind_sets", runtime_rows=rows)
    everyone = run_stage("everyone", runtime_rows=rows, runtimes=runtimes,
                         kind_sets=kind_sets)
    # OpenVINO is off in its own outputs by its bf16 setting alone: that makes the bf16
    # setting's gate row join its levels row, not the f32 setting's
    off = run_stage("off", runtime_rows=rows)
    assert off == [{"case_id": "m1", "runtime": "openvino", "lower": True}]
    blamed = run_stage("blamed", runtime_rows=rows, everyone=everyone, off=off,
                       off_on_file=[{"case_id": "another", "runtime": "openvino",
                                     "file": "fp16", "fam0": "model:fp16:scaled"}])
    grouped = run_stage("grouped", blamed=blamed, everyone=everyone)
    grouped_on_file = run_stage("grouped", everyone=everyone, blamed=[
        {**r, "fam": file} for r in on_file])
    assert len({(r["grp"], r["sub"]) for r in grouped_on_file}) == 1
    groups = run_stage("groups", kinds=run_stage("kinds", grouped=grouped))
    labelled = run_stage("labelled", groups=groups, runtimes=runtimes)
    hashed = run_stage("hashed", signed=run_stage(
        "signed", keyed=run_stage("keyed", labelled=labelled)))
    assert sorted((r["group_fam"], r["family"], r["outlier"], r["template"]) for r in hashed) == [
        ("model:fp32", "model:fp32", "openvino@f32", "fp32"),
        ("numeric", "precision", "openvino@bf16-default", "computes float32 in bf16")]
    # the bf16 setting's two rows are one finding, the f32 setting's another
    assert len({r["finding_id"] for r in hashed}) == 2


def _keyed(fam: str, outlier: str) -> dict[str, Any]:
    """A ``keyed`` group: a path's NaN where its yardstick is finite, on a model's fp16 file."""
    return {"case_id": "m", "group_fam": fam, "grp": "openvino", "sub": "", "outlier": outlier,
            "family": "non-finite", "kind": "nonfinite:actual", "cause_key": "",
            "model_case": True, "template": "", "dtype": "float32", "op_type": "model",
            "precision": None}


def test_a_paths_nan_on_a_model_file_is_one_id_whatever_settings_each_gate_names() -> None:
    # OpenVINO's f32 and bf16 settings NaN on vs-fp32, f32 alone on scaled (the bf16 setting
    # has no scaled row): one cause of the runtime on the file, one signature (the id's hash)
    rows = run_stage("signed", keyed=[_keyed("model:fp16:vs-fp32", "openvino"),
                                      _keyed("model:fp16:scaled", "openvino@f32"),
                                      _keyed("model:int8-static:vs-model", "openvino@f32")])
    signature = {r["group_fam"]: (r["family"], r["outlier"], r["template"], r["operator_key"])
                 for r in rows}
    assert signature["model:fp16:scaled"] == signature["model:fp16:vs-fp32"] == (
        "non-finite", "openvino", NONFINITE, "model@fp16")
    # another file is another scope: its own signature, its own settings
    assert signature["model:int8-static:vs-model"] == (
        "non-finite", "openvino@f32", NONFINITE, "model@int8-static")

"""A model case's paths each under their own budget, spread over the workers: a path that
hangs costs its own budget and one row naming it, every other row is kept, and the rows and
evidence do not depend on the number of workers."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from shared_helpers import classifier, reference_only_hang, rows_of

from gero import open_run
from gero_runner.execution.plan import Activity
from gero_runner.run import ModelOptions, RunRequest, execute


@pytest.mark.slow
def test_a_path_that_hangs_costs_only_its_own_budget(tmp_path: Path) -> None:
    model = reference_only_hang(tmp_path / "hang.onnx")
    seen: list[Activity] = []
    start = time.monotonic()
    record = execute(RunRequest(data_root=tmp_path / "data", models=[model], jobs=2,
                                backends=("onnxruntime",), path_budget_s=2.0, repeats=2,
                                model_options=ModelOptions(variants=("fp16",)), run_id="r",
                                paths="all"),  # every ORT level, each kept
                     activity=seen.append)
    assert time.monotonic() - start < 60  # under the default 60 s budget, or never
    rows = rows_of(tmp_path / "data", record.run_id)
    # (model:fp16:precision is an execution row saying ORT widens the fp16 file's nodes.)
    failed = [r for r in rows if r["result"] == "execution"
              and r["check"] != "model:fp16:precision"]
    # One row for the path that ran out, naming it, its budget and what it was not run on.
    assert [(r["backend"], r["reason"]) for r in failed] == [(
        "onnx-reference", "onnx-reference failed: the ReferenceEvaluator ran out of its 2 s "
        "budget on the model; not run on the fp16 variant and the contract graphs")]
    # Every other path's rows are kept: each ORT level against the float64 shadow, on the
    # contract graphs, on the fp16 variant.
    checks = {(r["check"], r["optimization"]) for r in rows if r["backend"] == "onnxruntime"}
    for level in ("disable_all", "basic", "extended", "all"):
        assert {("expected", level), ("model:fp32", level),
                ("contract:partition", level)} <= checks
    assert ("model:fp16:vs-model", "all") in checks and ("model:noise-floor", "all") in checks
    # The reference is not run again on the variant (the row above says so, once).
    assert not [r for r in rows if r["backend"] == "onnx-reference" and r is not failed[0]]
    # Progress named the path that ran, with its budget, and how many parts remain.
    ran = [(r.label, r.budget_s) for a in seen for r in a.running if r.elapsed_s >= 1.0]
    assert ("the ReferenceEvaluator on the model", 2.0) in ran
    assert seen[-1].parts_done == seen[-1].parts_planned > 10
    # Its finding's title keeps the budget's figure (a setting, not a count).
    titles = [f.title for f in open_run(record.run_id, tmp_path / "data").findings()
              if f.family == "execution" and "budget" in f.title]
    assert titles and all("ran out of its 2 s budget" in t for t in titles), titles


@pytest.mark.parametrize("variants", [["fp16", "int8-dynamic"]])
@pytest.mark.slow
def test_ids_and_evidence_do_not_depend_on_the_number_of_workers(tmp_path: Path,
                                                                 variants: list[str]) -> None:
    model = classifier(tmp_path / "clf.onnx")
    runs = {}
    for jobs in (1, 2):
        root = tmp_path / f"data{jobs}"
        record = execute(RunRequest(data_root=root, models=[model], jobs=jobs, repeats=2,
                                    backends=("onnxruntime",), run_id="r",
                                    model_options=ModelOptions(variants=tuple(variants))))
        runs[jobs] = rows_of(root, record.run_id)
    ids = [sorted((r["observation_id"], r["artifact_path"]) for r in runs[j]) for j in (1, 2)]
    assert ids[0] == ids[1] and len(ids[0]) > 50
    assert {r["check"] for r in runs[1]} >= {"model:fp16:vs-model", "model:int8-dynamic:cosine",
                                             "contract:threads", "model:noise-floor"}

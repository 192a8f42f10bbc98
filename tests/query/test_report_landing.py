"""The report's landing pieces, headless: one row per operation (what can be assessed and
fails first), the runtimes' settings one row each, the evidence folder beside the page, and
why a row has no histogram."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from test_assessable import _mixed_run  # the fixed rows that test orders

from gero.query.evidence_files import MARKER, evidence_folder, plan_evidence
from gero.query.findings import compute_findings
from gero.query.report import PathSetting, compact_paths, landing
from gero.query.source import open_source
from gero.query.tensors import load_evidence
from gero_runner.errors import ArtifactError, GeroError
from gero_runner.storage.hashing import npy_bytes


def test_the_landing_table_puts_what_can_be_assessed_first(tmp_path: Path) -> None:
    _mixed_run(tmp_path)
    source = open_source(tmp_path)
    findings = {f.finding_id: f for f in compute_findings(source)}
    rows = landing(source)
    assert [(r.op_type, r.row.result, r.actionable) for r in rows] == [
        ("Sigmoid", "contract_issue", True),
        ("Softmax", "divergence", True),  # its divergence, not its passed rows
        ("Max", "contract_issue", False),  # NaN in, NaN out: every failure set apart
        ("Elu", "execution", False),
    ]
    softmax = rows[1]
    assert softmax.row.max_abs_error == pytest.approx(1e-3)
    assert (softmax.observations, softmax.not_passed, softmax.not_assessable) == (4, 2, 0)
    assert (rows[2].not_passed, rows[2].not_assessable) == (27, 27)
    # each shown row names the finding that holds it
    assert all(findings[r.finding_id].operators == (r.op_type,) for r in rows)


def _path(backend: str, setting: str, n: int, **settings: str) -> PathSetting:
    return PathSetting(backend, "1.0", setting, tuple(sorted(settings.items())), n)


def test_a_runtimes_paths_are_one_row_with_what_differs_between_them() -> None:
    paths = [
        _path("onnxruntime", "disable_all", 10, level="disable_all", threads="1", mode="seq"),
        _path("onnxruntime", "disable_all", 2, level="disable_all", threads="2", mode="seq",
              spinning="false"),
        _path("onnxruntime", "all", 10, level="all", threads="1", mode="seq"),
        _path("onnx-reference", "reference", 7, evaluator="onnx"),
    ]
    ort, reference = compact_paths(paths)
    assert ort.settings == ("disable_all", "all") and ort.observations == 22
    assert ort.shared == (("mode", "seq"),)
    assert ort.varying == (("level", ("disable_all", "all")), ("spinning", ("—", "false")),
                           ("threads", ("1", "2")))
    assert reference.shared == (("evaluator", "onnx"),) and reference.varying == ()


def _artifact(root: Path, name: str, model: bytes) -> str:
    """An evidence directory as the runner writes one: graph, packed tensors, manifest."""
    relative = f"artifacts/{name[:2]}/{name}"
    directory = root / relative
    directory.mkdir(parents=True)
    x = npy_bytes(np.arange(6, dtype=np.float32).reshape(2, 3))
    y = npy_bytes(np.zeros(6, dtype=np.float32))
    with zipfile.ZipFile(directory / "tensors.npz", "w") as archive:
        archive.writestr("inputs/input_0.npy", x)
        archive.writestr("outputs/ort-all/output_0.npy", y)
    (directory / "model.onnx").write_bytes(model)
    (directory / "case.json").write_text("{}")
    files = {n: hashlib.sha256((directory / n).read_bytes()).hexdigest()
             for n in ("model.onnx", "case.json", "tensors.npz")}
    (directory / "manifest.json").write_text(json.dumps({
        "algorithm": "sha256", "files": files,
        "packed": {"tensors.npz": {"inputs/input_0.npy": hashlib.sha256(x).hexdigest()}}}))
    return relative


class _Rep:
    def __init__(self, artifact_path: str) -> None:
        self.artifact_path = artifact_path


class _Finding:
    def __init__(self, finding_id: str, artifact_path: str) -> None:
        self.finding_id = finding_id
        self.representative = _Rep(artifact_path)


def test_the_evidence_folder_holds_graph_inputs_and_manifest_each_digest_once(
        tmp_path: Path) -> None:
    root = tmp_path / "data"
    a = _artifact(root, "a" * 24, b"the graph")
    b = _artifact(root, "b" * 24, b"the graph")  # the same model behind another finding
    page = tmp_path / "out" / "run.html"
    page.parent.mkdir()
    findings = [_Finding("f1", a), _Finding("f2", b), _Finding("f3", "")]
    plan = plan_evidence(root, findings, page)  # type: ignore[arg-type]
    assert not evidence_folder(page).exists()  # nothing written before the page is
    plan.write()
    first, second = plan.downloads["f1"], plan.downloads["f2"]
    assert "f3" not in plan.downloads
    assert [f.label for f in first] == ["graph", "inputs", "case", "manifest"]
    for f in (*first, *second):
        data = (page.parent / f.href).read_bytes()
        assert hashlib.sha256(data).hexdigest() == f.sha256 and len(data) == f.size
    graph = first[0]
    assert graph.manifest is True and graph.href == "run-evidence/finding-f1/model.onnx"
    assert second[0].href == graph.href  # linked, not copied again
    inputs = np.load(page.parent / first[1].href)
    assert inputs["input_0"].tolist() == [[0, 1, 2], [3, 4, 5]]
    # a second report of the same name replaces its own folder
    plan_evidence(root, findings[:1], page).write()  # type: ignore[arg-type]
    assert not (evidence_folder(page) / "finding-f2").exists()
    assert (evidence_folder(page) / MARKER).is_file()


def test_a_folder_gero_did_not_write_is_never_replaced(tmp_path: Path) -> None:
    mine = tmp_path / "run-evidence"
    mine.mkdir()
    (mine / "notes.txt").write_text("a person's file")
    with pytest.raises(GeroError, match="is not the evidence folder of a gero report"):
        plan_evidence(tmp_path, [], tmp_path / "run.html")
    assert (mine / "notes.txt").read_text() == "a person's file"


def test_a_law_over_repeated_runs_says_it_compares_hashes_not_that_a_path_failed() -> None:
    row = {"artifact_path": "artifacts/aa/x", "actual_file": "outputs/ort-all/output_0.npy",
           "reference_file": "", "check": "contract:determinism",
           "reference": "law:repeated-run"}
    with pytest.raises(ArtifactError) as error:
        load_evidence(Path("/nonexistent"), row)
    message = str(error.value)
    assert "failed" not in message
    assert "contract:determinism against law:repeated-run compares output hashes" in message
    with pytest.raises(ArtifactError, match="a path failed before producing output"):
        load_evidence(Path("/nonexistent"), {"artifact_path": "", "actual_file": "",
                                             "reference_file": ""})

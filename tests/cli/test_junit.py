"""JUnit reports of `gero diff` and `gero findings`: parsed, checked case by case, and
valid against the JUnit schema CI systems read (tests/junit.xsd)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import gero
from gero_cli import main

xmlschema = pytest.importorskip("xmlschema", reason="xmlschema is in the test extra")
SCHEMA = Path(__file__).resolve().parents[1] / "junit.xsd"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("junit")
    gero.run(ops=["Exp"], dtypes=["float32"], repeats=1, jobs=1, run_id="base", data_dir=path)
    gero.run(ops=["Exp"], dtypes=["float32"], repeats=1, jobs=1, run_id="tight", data_dir=path,
             rtol={"float32": 1e-9}, atol={"float32": 0.0})
    return path


def _report(args: list[str], path: Path) -> ET.Element:
    main([*args, "--format", "junit", "-o", str(path)])
    xmlschema.XMLSchema(str(SCHEMA)).validate(str(path))
    return ET.parse(path).getroot()


@pytest.mark.slow
def test_diff_junit_has_one_failing_case_per_regression(root: Path, tmp_path: Path) -> None:
    with gero.open_run("tight", root) as run:
        report = run.diff("base")
    regressions = report.of("regression")
    assert regressions
    xml = _report(["diff", "base", "tight", "--data-dir", str(root)], tmp_path / "diff.xml")
    suite = xml.find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    failing = [c for c in cases if c.find("failure") is not None]
    assert len(failing) == len(regressions) == int(suite.get("failures", "-1"))
    assert int(suite.get("tests", "-1")) == len(cases)
    for case, entry in zip(failing, regressions, strict=True):
        failure = case.find("failure")
        assert failure is not None and failure.get("type") == "regression"
        assert failure.get("message") == entry.why
        text = failure.text or ""
        assert "max abs error: " in text and f"result: {entry.base_result} → " in text
        assert f"replay: gero replay {root}/artifacts/" in text
        assert f"--observation {entry.current_id}" in text
        assert case.get("name", "").startswith(entry.case_id)


def test_a_clean_diff_is_one_passing_case(root: Path, tmp_path: Path) -> None:
    xml = _report(["diff", "base", "base", "--data-dir", str(root)], tmp_path / "same.xml")
    cases = xml.findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == ["no precision regressions"]
    assert xml.get("failures") == "0"


def test_findings_junit_has_one_failing_case_per_finding(root: Path, tmp_path: Path) -> None:
    with gero.open_run("tight", root) as run:
        findings = run.findings()
    assert findings
    xml = _report(["findings", "--run", "tight", "--baseline", "base", "--data-dir",
                   str(root)], tmp_path / "findings.xml")
    failing = [c for c in xml.findall("testsuite/testcase") if c.find("failure") is not None]
    assert len(failing) == len(findings)
    for case, finding in zip(failing, findings, strict=True):
        failure = case.find("failure")
        assert failure is not None and failure.get("type") == finding.result
        assert failure.get("message") == finding.title
        text = failure.text or ""
        worst = finding.representative
        assert f"representative (worst) observation {worst.observation_id}" in text
        assert worst.reason in text and "max |a−r| = " in text
        assert f"replay: gero replay {root / worst.artifact_path} --observation " in text
        assert f"bundle: gero bundle {worst.observation_id[:16]}" in text


def test_the_schema_rejects_what_ci_could_not_read(tmp_path: Path) -> None:
    schema = xmlschema.XMLSchema(str(SCHEMA))
    assert not schema.is_valid("<testsuites><testsuite name='x'><testcase/></testsuite>"
                               "</testsuites>")  # tests= and the case's name are required
    assert schema.is_valid("<testsuites><testsuite name='x' tests='1'><testcase name='a'>"
                           "<failure message='m'>t</failure></testcase></testsuite>"
                           "</testsuites>")

"""The Markdown summary of a parity run: per output and level, metrics, tolerance, verdict.

Output names come from the user's module and reasons quote them: both are escaped
(gero_runner.escape), so that none can act as Markdown or HTML."""

from __future__ import annotations

from collections import Counter
from typing import Any

from gero_runner.escape import for_markdown, markdown_code
from gero_runner.parity.evaluate import details_of, figures_text
from gero_runner.schema import RESULT_CLASSES, RESULT_LABELS, Observation, RunRecord

VERDICTS = {"passed": "PASS", "divergence": "FAIL (divergence)",
            "contract_issue": "FAIL (NaN)", "execution": "ERROR"}


def _cell(text: str) -> str:
    return for_markdown(text.replace("\n", " "))


def _tolerance_text(row: dict[str, Any], details: dict[str, Any]) -> str:
    kind = details.get("kind", "dense")
    if kind == "keypoints":
        return f"coord_tol {row['atol']:g}, conf_tol {details.get('conf_tol', float('nan')):g}"
    if kind == "confidence":
        return f"conf_tol {row['atol']:g}"
    return f"rtol {row['rtol']:g}, atol {row['atol']:g}"


def markdown_report(record: RunRecord, rows: list[Observation], module: str) -> str:
    """A self-contained Markdown document (one table row per output per level)."""
    return _report(record, [r.as_dict() for r in rows], module)


def _report(record: RunRecord, rows: list[dict[str, Any]], module: str) -> str:
    counts = Counter(r["result"] for r in rows)
    overall = "PASS" if rows and counts["passed"] == len(rows) else "FAIL"
    first = rows[0] if rows else {}
    lines = [
        f"# Parity report: {markdown_code(module)}", "",
        f"- Verdict: **{overall}** ({counts['passed']} of {len(rows)} comparisons within "
        "tolerance)",
        f"- Run: {markdown_code(record.run_id)} ({record.started_at}), suite `parity`",
        f"- Reference: PyTorch {first.get('reference_version', '?')} (`torch.no_grad()`, "
        f"eval mode); candidate: ONNX Runtime {record.onnxruntime_version}, CPU",
        f"- Seed: {record.seed}; samples: {record.case_count}",
        "- Counts: " + ", ".join(f"{RESULT_LABELS[c]} {counts.get(c, 0)}"
                                 for c in RESULT_CLASSES),
        "",
        "| Sample | Output | Kind | ORT level | Metrics | Tolerance | Verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        details = details_of(row)
        kind = details.get("kind", "dense")
        if "mae" in details or "match_ratio" in details:
            metrics = figures_text(details)
        else:
            metrics = row["reason"]
        sample = str(row["case_name"]).split(":")[0].removeprefix("sample ")
        lines.append(
            f"| {_cell(sample)} | {_cell(str(row['output_name']))} | {kind} | "
            f"{row['optimization']} | {_cell(metrics)} | {_tolerance_text(row, details)} | "
            f"{VERDICTS.get(row['result'], row['result'])} |")
    problems = [r for r in rows if r["result"] != "passed"]
    if problems:
        lines += ["", "## Findings", ""]
        seen: set[tuple[str, str]] = set()
        for row in problems:
            key = (str(row["output_name"]), str(row["reason"]))
            if key in seen:
                continue
            seen.add(key)
            levels = sorted({str(r["optimization"]) for r in problems
                             if (str(r["output_name"]), str(r["reason"])) == key})
            lines.append(f"- {markdown_code(row['output_name'])} ({', '.join(levels)}): "
                         f"{_cell(str(row['reason']))}")
    lines += ["", "Evidence (graph, inputs, both outputs, manifest) for each row is under the "
              "data root; `gero replay ARTIFACT_DIR` re-runs it.", ""]
    artifacts = sorted({str(r["artifact_path"]) for r in rows if r.get("artifact_path")})
    lines += [f"- {markdown_code(a)}" for a in artifacts]
    return "\n".join(lines) + "\n"

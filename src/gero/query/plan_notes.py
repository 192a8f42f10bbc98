"""What a model run's plan left out and the notes its rows carry: shown, counted nowhere.

A setting the needed-paths plan did not run has no row (it would count as nothing); the
case's ``plan.json`` names it and says why. A ``note`` is a sentence on a row that changes
no verdict. Both are read here for ``gero summary``, the report and the explorer."""

from __future__ import annotations

from typing import Any

from gero_runner.errors import GeroError
from gero_runner.storage.artifacts import read_json_object, resolve_artifact
from gero_runner.storage.reader import OpenRun

PLAN_FILE = "plan.json"
"""``gero_runner.checks.model_parts.PLAN_FILE``, named here: that module loads the runtimes."""


def not_run(view: OpenRun) -> list[dict[str, Any]]:
    """One entry per model case and setting its plan did not run on the model: ``model``,
    ``setting`` (the path key, 'tract-unoptimized'), ``why`` and ``ran_on`` (the variant
    files it ran on all the same). A case without ``plan.json`` (``--paths all``, a gero
    before the plan, evidence collected) adds nothing."""
    rows = view.query("SELECT op_type, min(artifact_path) FROM obs "
                      "WHERE suite IN ('models', 'model') AND artifact_path <> '' "
                      "GROUP BY op_type, case_id ORDER BY op_type")
    found: list[dict[str, Any]] = []
    for model, relative in rows:
        try:
            plan = read_json_object(resolve_artifact(view.data_root, relative) / PLAN_FILE)
        except GeroError:  # a path outside the data root: nothing to show
            plan = None
        if not plan or not isinstance(plan.get("not_run"), dict):
            continue
        on_variants = plan.get("ran_on_variants") or {}
        for setting, why in plan["not_run"].items():
            found.append({"model": model, "setting": setting, "why": str(why),
                          "ran_on": list(on_variants.get(setting, []))})
    return found


def notes(view: OpenRun) -> list[dict[str, Any]]:
    """Each distinct note of the run's rows with the model (operation) it is on and how many
    rows carry it, most rows first."""
    got = view.query("SELECT op_type, note, count(*) AS n FROM obs WHERE note <> '' "
                     "GROUP BY op_type, note ORDER BY n DESC, op_type, note")
    return [{"model": model, "note": note, "rows": n} for model, note, n in got]


def setting_words(entry: dict[str, Any]) -> str:
    """One line: 'tract unoptimized on magika — tract optimized is within its gates …'."""
    why = entry["why"].removeprefix("not needed: ")
    on = entry["ran_on"]
    ran = f" (ran on the {', '.join(on)} file{'s' if len(on) > 1 else ''})" if on else ""
    return f"{entry['setting'].replace('-', ' ', 1)} on {entry['model']}{ran} — {why}"

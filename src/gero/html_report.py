"""A run report as one self-contained HTML page: inline CSS and SVG, no script, nothing fetched.

The page follows the product's landing page: the comparison, counts by class,
the evidence (findings worst first), precision across operations (a bar per operation whose
segments link to the rows behind them), inference time with context. Every value that comes
from a run (graph and case names, run ids, messages) is hostile input: the small template
helpers here escape whatever is not already markup, so a value can only ever be text.
Colour is never the only signal: each class has a pattern and its name beside it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from gero.html_markup import Html, esc, fill, join
from gero.html_releases import release_section
from gero.query.assessable import LABELS as APART_LABELS
from gero.query.assessable import SHORT_LABELS as APART_SHORT
from gero.query.findings import Finding, path_name
from gero.query.report import (
    DownloadFile,
    EvaluationRow,
    FindingEvidence,
    LandingRow,
    OperationBar,
    RunReport,
    Segment,
)
from gero.query.tensors import ElementAnalysis
from gero.query.verdicts import FILES, SAFE, Verdict, arbiter_words, causes
from gero_runner import backends
from gero_runner.backends import title as backend_title
from gero_runner.result_classes import (
    CONTRACT_ISSUE,
    DIVERGENCE,
    EXECUTION,
    PASSED,
    RESULT_CLASSES,
)

CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
"""The page may load nothing: no script, no font, no image from anywhere."""

CLASS_NAMES = {PASSED: "Passed", DIVERGENCE: "Divergence", CONTRACT_ISSUE: "Contract issue",
               EXECUTION: "Execution / unsupported"}
"""The legend's words (the four result classes of docs/explanation/observations.md)."""
PATTERN_NAMES = {PASSED: "solid", DIVERGENCE: "diagonal stripes", CONTRACT_ISSUE: "cross-hatch",
                 EXECUTION: "dots"}
REFERENCE_NOTES = {
    "numpy-float64": "float64: the operator's analytic NumPy formula, or the graph run with "
                     "every float tensor widened to float64 (the arbiter)",
    "onnx-reference": "the official onnx ReferenceEvaluator (a path, not an oracle)",
    "onnx-reference-corrected": "the ReferenceEvaluator with its registered defects corrected",
    "onnxruntime:disable_all": "ONNX Runtime without graph optimisations: each level against it",
    "base-graph": "the case's own graph: an algebraic variant must agree with it",
    "expected": "the outputs the case ships with (computed by onnx)",
}
MIN_SEGMENT = 0.4
"""Per cent of a bar's width below which a segment is drawn at that width, so it stays seen
(the counts beside the bar are exact)."""
MAX_DETAILS = 200
"""Characters of a row's reason shown in a table cell (the explorer has the whole text)."""
MAX_BARS = 16
"""Decades a histogram draws; those below are one bar."""
LABEL_CHAR = 6.6
"""Width of a character of a histogram label (11 px sans-serif), for the choice between a
label under its bar and one turned upright along its bar's centre line."""


# Numbers --------------------------------------------------------------------------------

def num(value: float | None, digits: int = 6) -> str:
    """A stored figure: ``digits`` significant digits; absent is a dash."""
    if value is None:
        return "—"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "inf" if value > 0 else "−inf"
    return f"{value:.{digits}g}"


def figure(value: float | None) -> str:
    """A stored per-observation figure: NaN there means none (a path failed, nothing
    compared), shown as a dash like the explorer's detail view."""
    return "—" if isinstance(value, float) and math.isnan(value) else num(value)


def ms(value: float | None) -> str:
    return "—" if value is None or not math.isfinite(value) else f"{value:.3f}"


def count(n: int) -> str:
    return f"{n:,}"


def _distribution(backend: str) -> str:
    """The distribution that provides a backend (its name for one unknown here)."""
    runtime = backends.find(backend)
    return runtime.distribution if runtime is not None else backend


def runtime_name(backend: str) -> str:
    """A backend as a table cell names it: its title without a sentence's article
    ("ReferenceEvaluator", "ONNX Runtime", "tract")."""
    name = backend_title(backend)
    return name[4:] if name.startswith("the ") else name


# Class labels, patterns, legend ---------------------------------------------------------

_PATTERNS = """<svg class="defs" width="0" height="0" aria-hidden="true" focusable="false"><defs>
<pattern id="fill-passed" width="8" height="8" patternUnits="userSpaceOnUse">
<rect width="8" height="8" fill="#3f8f4a"/></pattern>
<pattern id="fill-divergence" width="8" height="8" patternUnits="userSpaceOnUse"
 patternTransform="rotate(45)"><rect width="8" height="8" fill="#f2b134"/>
<rect width="3" height="8" fill="#8c5a00"/></pattern>
<pattern id="fill-contract_issue" width="8" height="8" patternUnits="userSpaceOnUse">
<rect width="8" height="8" fill="#e46a6a"/>
<path d="M0 0L8 8M8 0L0 8" stroke="#7d1414" stroke-width="1.5"/></pattern>
<pattern id="fill-execution" width="7" height="7" patternUnits="userSpaceOnUse">
<rect width="7" height="7" fill="#c9c9c9"/><circle cx="3.5" cy="3.5" r="1.5" fill="#444"/>
</pattern>
<pattern id="fill-outside" width="6" height="6" patternUnits="userSpaceOnUse"
 patternTransform="rotate(45)"><rect width="6" height="6" fill="#e46a6a"/>
<rect width="2" height="6" fill="#7d1414"/></pattern>
</defs></svg>"""


def swatch(result: str) -> Html:
    """The class's pattern as a small square (CSS: a few bytes, repeated on every row)."""
    return fill('<i class="sw sw-$c" aria-hidden="true"></i>', c=result)


def class_label(result: str) -> Html:
    """The class's name beside its pattern: never colour alone."""
    return fill('<span class="cls cls-$c">$swatch$name</span>', c=result, swatch=swatch(result),
                name=CLASS_NAMES.get(result, result))


def _legend() -> Html:
    items = [fill('<li>$label <span class="pattern">($pattern)</span></li>',
                  label=class_label(c), pattern=PATTERN_NAMES[c]) for c in RESULT_CLASSES]
    return fill('<ul class="legend" aria-label="legend">$items</ul>', items=join(items))


# Sections -------------------------------------------------------------------------------

def _header(r: RunReport) -> Html:
    rec = r.record
    meta = [f"suite {rec.get('suite', '?')}", str(rec.get("status", "?")),
            f"{count(int(rec.get('case_count') or 0))} cases",
            f"{count(r.observations)} observations",
            f"{rec.get('started_at', '?')} → {rec.get('finished_at', '?')}"]
    models = rec.get("models") or []
    model_line = fill('<p class="meta">model$s: $names</p>', s="s" if len(models) > 1 else "",
                      names=", ".join(map(str, models))) if models else Html("")
    nav = join(fill('<li><a href="#$id">$label</a></li>', id=i, label=label) for i, label in (
        ("counts", "Counts by class"), ("comparison", "The comparison"),
        ("evaluations", "Evaluations"), ("operations", "Precision across operations"),
        ("timing", "Inference time"), ("criteria", "Criteria"),
        ("findings", "Findings and evidence"), ("compared", "Runtimes and versions"),
        ("scope", "Scope")))
    return fill("""<header class="hero">
<p class="kicker">Precision is a property. Test it.</p>
<h1>Run report <code>$run</code></h1>
<p class="meta">$meta</p>$models
<p class="meta command">command: <code>$command</code></p>
<nav aria-label="sections"><ul>$nav</ul></nav>
</header>""", run=r.run_id, meta=" · ".join(meta), models=model_line,
                command=rec.get("command_line") or "—", nav=nav)


def _settings_text(pairs: tuple[tuple[str, str], ...]) -> Html:
    return join((fill("<span class=\"kv\">$k=$v</span>", k=k, v=v) for k, v in pairs), " ")


def _few(values: tuple[str, ...], limit: int = 8) -> str:
    more = f" and {len(values) - limit} more" if len(values) > limit else ""
    return ", ".join(values[:limit]) + more


def _comparison(r: RunReport) -> Html:
    """The landing page's comparison box: the runtimes under test, the inequality, the
    references."""
    tested = [p for p in r.paths if p.backend != "onnx-reference"]
    runtimes = list(dict.fromkeys((p.backend, p.version) for p in tested))
    actual = join((fill("<li><strong>$name</strong> $version</li>", name=runtime_name(b),
                        version=v) for b, v in runtimes))
    arbiters = {"onnx-reference": "official implementation",
                "numpy-float64": "float64 formula or shadow: the arbiter"}
    refs = join(fill("<li><strong>$name</strong> $version <span class=\"ref-note\">$note</span>"
                     "</li>", name=runtime_name(x.reference), version=x.version,
                     note=arbiters[x.reference])
                for x in r.references if x.reference in arbiters)
    return fill("""<section id="comparison" aria-labelledby="comparison-h">
<h2 id="comparison-h"><span class="num">02</span> The comparison</h2>
<div class="compare">
<div><p class="tag">Actual</p><ul class="plain">$actual</ul></div>
<div class="formula"><code>|actual − reference| ≤ atol + rtol · |reference|</code></div>
<div><p class="tag">Reference</p><ul class="plain">$refs</ul></div>
</div>
<p class="small">Each runtime's settings, versions and the machine:
<a href="#compared">Runtimes and versions</a>; tolerances: <a href="#criteria">the
criteria</a>.</p>
</section>""", actual=actual or Html("<li>—</li>"), refs=refs or Html("<li>—</li>"))


def _compared(r: RunReport) -> Html:
    """What ran: one row per runtime (its settings, the session settings they share, those
    that differ between its paths), the references, the versions and the machine."""
    rec = r.record
    ref_rows = join(fill("<tr><td><code>$ref</code></td><td>$version</td><td>$note</td>"
                         "<td class=\"n\">$n</td></tr>", ref=x.reference, version=x.version,
                         note=REFERENCE_NOTES.get(x.reference, ""), n=count(x.observations))
                    for x in r.references)
    path_rows = join(fill("<tr><td>$name</td><td>$version</td><td>$settings</td>"
                          "<td>$shared</td><td>$varying</td><td class=\"n\">$n</td></tr>",
                          name=runtime_name(x.backend), version=", ".join(x.versions),
                          settings=join((fill("<code>$s</code>", s=s) for s in x.settings),
                                        ", "),
                          shared=_settings_text(x.shared),
                          varying=join((fill('<span class="kv">$k: $v</span>', k=k,
                                             v=" | ".join(v)) for k, v in x.varying), " ")
                          or "—", n=count(x.observations)) for x in r.runtimes)
    env = [("onnx", rec.get("onnx_version")), ("ONNX Runtime", rec.get("onnxruntime_version")),
           ("NumPy", rec.get("numpy_version")), ("Python", rec.get("python_version")),
           ("CPU", rec.get("cpu_model")), ("intra-op threads", rec.get("threads")),
           ("worker processes", rec.get("jobs")), ("seed", rec.get("seed"))]
    # The record versions onnx and onnxruntime on its own (the rows above): a runtime one of
    # them provides (its Backend.distribution) is not listed twice.
    env += [(runtime_name(b), v) for b, v in (rec.get("backends") or {}).items()
            if _distribution(b) not in ("onnx", "onnxruntime")]
    env_rows = join(fill("<div><dt>$k</dt><dd>$v</dd></div>", k=k, v="—" if v is None else v)
                    for k, v in env)
    return fill("""<section id="compared" aria-labelledby="compared-h">
<h2 id="compared-h"><span class="num">08</span> Runtimes and versions</h2>
<div class="scroll"><table><thead><tr><th scope="col">Runtime</th><th scope="col">Version</th>
<th scope="col">Settings</th><th scope="col">Session settings (every setting)</th>
<th scope="col">Differs between its paths</th>
<th scope="col" class="n">Observations</th></tr></thead><tbody>$paths</tbody></table></div>
<h3>References compared against</h3>
<div class="scroll"><table><thead><tr><th scope="col">Reference</th><th scope="col">Version</th>
<th scope="col">What it is</th><th scope="col" class="n">Observations</th></tr></thead>
<tbody>$ref_rows</tbody></table></div>
<p class="small">Contracts compare a path with itself under a law (full batch against its parts,
a repeated run, a masked row against zero); those rows are counted by check, not here.</p>
<h3>Versions and machine</h3><dl class="env">$env</dl>
</section>""", paths=path_rows, ref_rows=ref_rows, env=env_rows)


def _criteria(r: RunReport) -> Html:
    """The criteria: the comparison's inequality and the tolerance each dtype stored."""
    tol_rows = join(fill(
        "<tr$cls><td>$dtype</td><td class=\"n\">$rtol</td><td class=\"n\">$atol</td>"
        "<td class=\"n\">$drtol</td><td class=\"n\">$datol</td><td>$state</td>"
        "<td class=\"n\">$n</td></tr>",
        cls=Html(' class="override"') if t.overridden or t.own else Html(""), dtype=t.dtype,
        rtol=num(t.rtol), atol=num(t.atol),
        drtol="—" if t.default is None else num(t.default[0]),
        datol="—" if t.default is None else num(t.default[1]),
        state=(Html("<strong>override</strong> (--rtol/--atol)") if t.overridden
               else fill("the operator's own bound: $ops", ops=_few(t.operators)) if t.own
               else "default" if t.default is not None else "exact (not a float dtype)"),
        n=count(t.observations)) for t in r.tolerances)
    if not r.tolerances:
        tol_rows = Html('<tr><td colspan="7">no comparison rows stored a tolerance</td></tr>')
    return fill("""<section id="criteria" aria-labelledby="criteria-h">
<h2 id="criteria-h"><span class="num">06</span> The criteria</h2>
<p>A comparison passes where every element holds
<code>|actual − reference| ≤ atol + rtol · |reference|</code>; NaN never matches (NaN == NaN is
never a passing result), equal infinities do.</p>
<h3>Comparison tolerances</h3>
<div class="scroll"><table><thead><tr><th scope="col">Dtype</th><th scope="col" class="n">rtol</th>
<th scope="col" class="n">atol</th><th scope="col" class="n">default rtol</th>
<th scope="col" class="n">default atol</th>
<th scope="col"></th><th scope="col" class="n">Comparisons</th></tr></thead>
<tbody>$tols</tbody></table></div>
<p class="small">As stored by the agreement, analytic, expected and levels rows. Each
observation stores its actual tolerance, including CLI overrides; laws have tolerances of
their own.</p>
</section>""", tols=tol_rows)


APART = "apart"
"""The style of what cannot be assessed by construction (grey, dotted): not a class."""


def _counts(r: RunReport) -> Html:
    """The counts of the first screen: the issues tiles count what a user acts on; what
    cannot be assessed by construction (NaN in, NaN out; an operator a runtime does not
    implement) is a tile of its own, and the four classes as stored are said below."""
    c = r.counts
    act = dict(r.split.assessable) if r.split is not None else dict(c)
    apart = r.split.not_assessable if r.split is not None else {}
    issues = act.get(CONTRACT_ISSUE, 0) + act.get(EXECUTION, 0)
    tiles = [
        ("Evaluations", count(r.observations), Html("Observations stored for this run"), ""),
        ("Within contract", count(c[PASSED]), Html("Agreement + invariant checks"), PASSED),
        ("Backend divergences", count(act.get(DIVERGENCE, 0)),
         Html("Candidates for investigation"), DIVERGENCE),
        ("Contract / execution issues", count(issues), fill(
            "Baseline not assessed: $ci contract issue, $ex execution / unsupported",
            ci=count(act.get(CONTRACT_ISSUE, 0)), ex=count(act.get(EXECUTION, 0))),
         CONTRACT_ISSUE),
    ]
    if apart:
        tiles.append(("Cannot be assessed", count(sum(sum(by.values())
                                                      for by in apart.values())),
                      fill("By construction, counted apart: $parts", parts=", ".join(
                          f"{count(sum(by.values()))} {APART_SHORT[why]}"
                          for why, by in apart.items())), APART))
    body = join(fill('<div class="tile tile-$k" id="tile-$id"><p class="tile-label">$sw$label'
                     '</p><p class="tile-n">$n</p><p class="tile-note">$note</p></div>',
                     k=k or "all", id=k or "all", sw=swatch(k) if k else Html(""),
                     label=label, n=n, note=note)
                for label, n, note, k in tiles)
    stored = " · ".join(f"{count(c[k])} {CLASS_NAMES[k].lower()}" for k in RESULT_CLASSES)
    said = fill("<p class=\"small\">By class, as stored: $stored.$apart</p>", stored=stored,
                apart=fill(" Counted apart, and listed last among the findings: $parts.",
                           parts="; ".join(
                               f"{count(sum(by.values()))} {APART_LABELS[why]} ("
                               + ", ".join(CLASS_NAMES[k].lower() for k in by) + ")"
                               for why, by in apart.items())) if apart else Html(""))
    return fill("""<section id="counts" aria-labelledby="counts-h">
<h2 id="counts-h"><span class="num">01</span> Counts by class</h2>
<div class="tiles">$tiles</div>$said</section>""", tiles=body, said=said)


VERDICT_WORDS = {"safe": "safe", "off": "OFF", "cannot-run": "cannot run",
                 "not-run": "not run (plan)", "not-built": "not built"}
"""A verdict in a cell: the word carries it, its colour only repeats it."""


def _verdicts(r: RunReport) -> Html:
    """The verdict card of each model, first: a row per runtime setting, a cell per file,
    then what is not safe, by how much against which gate and arbiter, or why."""
    if not r.verdicts:
        return Html("")
    cases = list(dict.fromkeys((v.model, v.case_id) for v in r.verdicts))
    cards = [_verdict_card(model, [v for v in r.verdicts if v.case_id == case])
             for model, case in cases]
    return fill("""<section id="verdict" aria-labelledby="verdict-h">
<h2 id="verdict-h">Is the model safe here?</h2>
<p class="small">Each runtime setting on the model as given (fp32) and on each variant the run
built: <strong>safe</strong> (every model-level gate passed), <strong>OFF</strong> (a gate did
not: by how much, against which gate and arbiter, below) or <strong>cannot run</strong> (why,
below). <code>gero verdict</code> prints the same card; its exit status gates a CI.</p>
$cards$plan</section>""", cards=join(cards), plan=_plan_notes(r))


def _plan_notes(r: RunReport) -> Html:
    """The settings the plan did not run (why) and the rows' notes: shown, in no count."""
    from gero.query.plan_notes import setting_words

    parts = []
    if r.not_run:
        items = join(fill("<li>$line</li>", line=setting_words(e)) for e in r.not_run)
        parts.append(fill("""<h3>Not run (not needed)</h3>
<p class="small">Settings the plan left out: no row, in no count (<code>--paths all</code>
runs them).</p><ul class="not-run">$items</ul>""", items=items))
    if r.notes:
        items = join(fill("<li><strong>$model</strong>$rows: $note</li>", model=e["model"],
                          rows=f" ({e['rows']} rows)" if e["rows"] > 1 else "",
                          note=e["note"]) for e in r.notes)
        parts.append(fill("""<h3>Notes</h3>
<p class="small">Sentences on rows that change no verdict.</p><ul class="notes">$items</ul>""",
                          items=items))
    return join(parts)


def _verdict_card(model: str, card: list[Verdict]) -> Html:
    files = [f for f in FILES if any(v.file == f for v in card)]
    by_cell = {(v.runtime, v.setting, v.file): v for v in card}
    settings = list(dict.fromkeys((v.runtime, v.setting) for v in card))
    counts = {k: sum(v.verdict == k for v in card) for k in VERDICT_WORDS}

    def cell(v: Verdict | None) -> Html:
        if v is None:
            return Html("<td>—</td>")
        # a setting the plan left out, a file not built: said in the notes below the card
        detail = "" if v.verdict in (SAFE, "not-run", "not-built") else (
            v.figure_text() if v.verdict == "off" else "see below")
        return fill('<td class="v v-$k"><strong>$word</strong>$detail</td>', k=v.verdict,
                    word=VERDICT_WORDS[v.verdict],
                    detail=fill('<br><span class="small">$d</span>', d=detail) if detail
                    else Html(""))

    rows = join(fill("<tr><th scope=\"row\">$rt</th><td>$setting</td>$cells</tr>",
                     rt=runtime_name(rt), setting=setting,
                     cells=join(cell(by_cell.get((rt, setting, f))) for f in files))
                for rt, setting in settings)
    groups = causes(card)  # a line per cause, said by its worst verdict
    notes = join(fill("<li><strong>$where</strong>: $what</li>",
                      where=_settings_of(group, settings), what=_verdict_note(group))
                 for group in groups)
    return fill("""<div class="scroll"><table class="verdict">
<caption>$model: $safe safe, $off off, $cannot cannot run</caption>
<thead><tr><th scope="col">Runtime</th><th scope="col">Setting</th>$heads</tr></thead>
<tbody>$rows</tbody></table></div>$notes""", model=model, safe=str(counts["safe"]),
                off=str(counts["off"]), cannot=str(counts["cannot-run"]),
                heads=join(fill('<th scope="col">$f</th>', f=f) for f in files), rows=rows,
                notes=fill('<ul class="plain">$items</ul>', items=notes) if groups
                else Html(""))


def _settings_of(group: list[Verdict], settings: list[tuple[str, str]]) -> str:
    """'ONNX Runtime basic, all · int8-dynamic', or every setting."""
    mine = [rs for rs in settings if any((v.runtime, v.setting) == rs for v in group)]
    files = " ".join(dict.fromkeys(v.file for v in group))
    if len(mine) == len(settings) > 1:
        return f"every runtime setting · {files}"
    runtimes = dict.fromkeys(r for r, _ in mine)
    return "; ".join(f"{runtime_name(r)} " + ", ".join(s for q, s in mine if q == r)
                     for r in runtimes) + f" · {files}"


def _verdict_note(group: list[Verdict]) -> Html:
    v = group[0]
    if v.verdict == "off":
        inherited = (f" (its runtime's baseline judges the {v.file} file)"
                     if all(w.inherited for w in group) else "")
        return fill("off, $figure against $arbiter$inherited "
                    '<span class="check">$check · output $output · observation $oid</span>',
                    figure=v.figure_text(), arbiter=arbiter_words(v.arbiter),
                    inherited=inherited, check=v.check, output=v.output,
                    oid=v.observation_id[:12])
    oid = (fill(' <span class="check">observation $oid</span>', oid=v.observation_id[:12])
           if v.observation_id else Html(""))
    return fill("cannot run: $reason$oid", reason=v.reason, oid=oid)


def _landing(r: RunReport) -> Html:
    """The landing page's evaluations table, one row per operation: its worst row that can be
    assessed, operations with something to act on first."""
    if not r.landing:
        return Html("")
    bar_of = {b.op_type: i for i, b in enumerate(r.bars, 1)}
    card_of = {e.finding.finding_id: i for i, e in enumerate(r.findings, 1)}
    rows: list[Html] = []
    divided = False
    for item in r.landing:
        if not item.actionable and not divided:
            divided = True
            rows.append(Html('<tr class="divider"><th colspan="6" scope="rowgroup">Nothing to '
                             'act on: what failed cannot be assessed by construction, or '
                             'every row passed</th></tr>'))
        rows.append(_landing_row(item, bar_of.get(item.op_type), card_of))
    return fill("""<section id="evaluations" aria-labelledby="evaluations-h">
<h2 id="evaluations-h"><span class="num">03</span> Evaluations: the worst of each operation</h2>
<p>Per operation, the row to look at first: its worst that can be assessed (contract issue,
divergence, failure, then the largest max abs. error), or its largest difference where every
row passed. Every row of an operation: its bar under
<a href="#operations">Precision across operations</a>.</p>
<div class="scroll"><table class="landing"><thead><tr>
<th scope="col">Operation / test case</th><th scope="col">Input</th>
<th scope="col">Optimization</th><th scope="col" class="n">Max abs. error</th>
<th scope="col">Result</th><th scope="col">Details</th></tr></thead>
<tbody>$rows</tbody></table></div></section>""", rows=join(rows))


def _landing_row(item: LandingRow, bar: int | None, card_of: dict[str, int]) -> Html:
    row = item.row
    op = fill('<a href="#op-$i">$op</a>', i=str(bar), op=item.op_type) if bar is not None \
        else esc(item.op_type)
    case = fill('<br><span class="small">$c</span>', c=row.case) \
        if row.case != item.op_type else Html("")
    card = card_of.get(item.finding_id)
    finding = fill(' <a class="small" href="#finding-$k">finding #$k</a>', k=str(card)) \
        if card is not None else Html("")
    details = row.details if len(row.details) <= MAX_DETAILS \
        else row.details[:MAX_DETAILS - 1] + "…"
    apart = f", {count(item.not_assessable)} cannot be assessed" if item.not_assessable else ""
    tally = (f"{count(item.not_passed)} of {count(item.observations)} not passed{apart}"
             if item.not_passed else f"all {count(item.observations)} passed")
    return fill("<tr$cls><td>$op$case</td><td>$input</td><td><code>$opt</code></td>"
                "<td class=\"n\">$err</td><td>$result$finding</td><td><span class=\"check\">"
                "$check</span> $details<br><span class=\"small\">$tally</span></td></tr>",
                cls=Html("") if item.actionable else Html(' class="apart"'), op=op, case=case,
                input=f"{row.dtype} {row.input_shapes}", opt=row.optimization,
                err=num(row.max_abs_error), result=class_label(row.result), finding=finding,
                check=row.check, details=details, tally=tally)


_NOTE = """<aside class="note" id="what-a-divergence-is" aria-label="what a divergence is">
<p class="i" aria-hidden="true">i</p><div>
<p><strong>A difference is a starting point.</strong> A backend disagreement does not identify
which implementation is wrong. A precision regression requires a compatible baseline; upstream
bug status requires investigation.</p>
<p>A <strong>divergence</strong> is two paths given the same graph and inputs disagreeing beyond
the tolerance the observation stores; where a float64 value exists, the row records which side
it sides with, judged at the elements out of tolerance. It is <strong>not</strong> a verdict on
which runtime is wrong, not a regression (that needs <code>gero diff</code> against a compatible
baseline), and not an upstream bug until replayed and investigated. NaN == NaN is never a
passing result; a check that compared nothing is not a pass.
<a href="#criteria">Read the criteria</a>.</p></div></aside>"""


def _histogram_svg(a: ElementAnalysis, label: str) -> Html:
    """log10 |a − r| by decade over the finite pairs, exact zeros as their own bar, bars past
    the tolerance line hatched."""
    bins = [(b.label, b.count, b.log10_low >= a.tolerance_log10) for b in a.abs_bins]
    if len(bins) > MAX_BARS:
        # Subnormal differences reach 1e-324: the lowest decades become one bar.
        low, bins = bins[:len(bins) - MAX_BARS + 1], bins[len(bins) - MAX_BARS + 1:]
        bins.insert(0, (f"< {bins[0][0]}", sum(n for _, n, _ in low), low[0][2]))
    bars = ([("= 0", a.zero_error, False)] if a.zero_error else []) + bins
    if not bars:
        return Html('<p class="small">no finite pair of elements to draw</p>')
    # Rows from the top: the tolerance's label alone (16 px), the counts above the bars,
    # the bars, the axis, then each bar's label under it (level when every label fits its
    # slot, else upright, reading upwards, one line's height wide): no text on a bar or on
    # another text.
    width, left, legend, top = 640, 46, 16, 34
    slot = (width - left - 10) / len(bars)
    level = all(len(t) * LABEL_CHAR + 6 <= slot for t, _, _ in bars)
    bottom = 24 if level else 14 + int(max(len(t) for t, _, _ in bars) * LABEL_CHAR)
    height = top + 124 + bottom
    peak = max(n for _, n, _ in bars) or 1
    parts: list[Html] = []
    line_x: float | None = None
    axis_y = height - bottom
    for i, (text, n, outside) in enumerate(bars):
        x = left + i * slot
        h = (axis_y - top) * n / peak
        y = axis_y - h
        if outside and line_x is None:
            line_x = x
        cx = x + slot / 2
        under = (fill('<text x="$cx" y="$ly" class="svg-n">$label</text>', cx=f"{cx:.1f}",
                      ly=f"{axis_y + 15:.1f}", label=text) if level else
                 fill('<text x="$cx" y="$ly" class="svg-l svg-slant" '
                      'transform="rotate(-90 $cx $ly)">$label</text>', cx=f"{cx + 4:.1f}",
                      ly=f"{axis_y + 6:.1f}", label=text))
        parts.append(fill(
            '<rect x="$x" y="$y" width="$w" height="$h" fill="url(#fill-$f)" stroke="#222" '
            'stroke-width="0.6"><title>$tip</title></rect>'
            '<text x="$cx" y="$ny" class="svg-n">$n</text>$under',
            x=f"{x + 2:.1f}", y=f"{y:.1f}", w=f"{max(slot - 4, 1):.1f}", h=f"{max(h, 0.5):.1f}",
            f="outside" if outside else "passed", cx=f"{cx:.1f}",
            ny=f"{y - 5:.1f}", n=count(n), under=under,
            tip=f"{text}: {count(n)} element(s)" + (" beyond the tolerance line" if outside
                                                    else "")))
    if line_x is None and a.abs_bins and math.isfinite(a.tolerance_log10) \
            and a.abs_bins[-1].log10_low < a.tolerance_log10:
        line_x = width - 12
    if line_x is not None:
        parts.append(fill('<line x1="$x" x2="$x" y1="$t" y2="$b" class="tol-line"/>'
                          '<text x="$tx" y="$ty" class="svg-l">tolerance ≈ $tol</text>',
                          x=f"{line_x:.1f}", t=str(legend + 2), b=f"{axis_y:.1f}",
                          tx=f"{min(line_x + 3, width - 110):.1f}", ty=str(legend - 4),
                          tol=num(10.0 ** a.tolerance_log10, 3)))
    axis = fill('<line x1="$l" x2="$r" y1="$y" y2="$y" stroke="#222"/>'
                '<text x="4" y="$ay" class="svg-l">count</text>',
                l=str(left), r=str(width - 8), y=f"{axis_y:.1f}", ay=str(top + 8))
    return fill('<svg class="hist" viewBox="0 0 $w $h" role="img" aria-label="$label">'
                '<title>$label</title>$axis$bars</svg>', w=str(width), h=str(height),
                label=label, axis=axis, bars=join(parts))


def _worst_elements(a: ElementAnalysis) -> Html:
    if not a.worst:
        return Html("")
    exact = any(w.exact is not None for w in a.worst)
    rows = join(fill("<tr><td><code>$i</code></td><td class=\"n\">$a</td><td class=\"n\">$r</td>"
                     "$e<td class=\"n\">$d</td><td class=\"n\">$u</td><td>$within</td></tr>",
                     i="[" + ", ".join(map(str, w.index)) + "]", a=num(w.actual, 9),
                     r=num(w.reference, 9),
                     e=fill('<td class="n">$v</td>', v=num(w.exact, 9)) if exact else Html(""),
                     d=num(w.abs_error, 4),
                     u="—" if math.isnan(w.abs_error) else num(w.ulp, 6),  # NaN: no distance
                     within="within" if w.within else Html("<strong>outside</strong>"))
                for w in a.worst)
    return fill('<div class="scroll"><table class="worst"><caption>Worst elements</caption>'
                '<thead><tr><th scope="col">Index</th><th scope="col" class="n">Actual</th>'
                '<th scope="col" class="n">Reference</th>$eh<th scope="col" class="n">'
                '|a − r|</th><th scope="col" class="n">ULP</th><th scope="col">Tolerance</th>'
                '</tr></thead>'
                '<tbody>$rows</tbody></table></div>',
                eh=Html('<th scope="col" class="n">float64</th>') if exact else Html(""), rows=rows)


def _finding_card(i: int, e: FindingEvidence, baseline: bool) -> Html:
    f, r = e.finding, e.finding.representative
    counts = ", ".join(f"{count(n)} {CLASS_NAMES[c].lower()}" for c, n in f.class_counts.items()
                       if n)
    status = fill('<span class="status status-$s">$s</span>', s=f.status) \
        if baseline and f.status else Html("")
    facts = [("observations", f"{count(f.observations)} ({counts})"), ("cases", count(f.cases)),
             ("operators", ", ".join(f.operators) or "—"), ("dtypes", ", ".join(f.dtypes) or "—"),
             ("settings", ", ".join(f.levels) or "—"), ("outlier", path_name(f.outlier)),
             ("max |a − r|", figure(f.max_abs_error)), ("finding id", f.finding_id)]
    rep = [("case", r.case_id), ("check", r.check), ("input", f"{r.dtype} {r.input_shapes}"),
           ("path", f"{runtime_name(r.backend)} {r.optimization} against {r.reference}"),
           ("result", CLASS_NAMES.get(r.result, r.result)), ("reason", r.reason),
           ("max |a − r|", figure(r.max_abs_error)),
           # one bad element, or a bad tensor (— for rows of a gero before percentiles)
           ("|a − r| p99 / median", f"{figure(r.p99_abs_error)} / "
                                    f"{figure(r.median_abs_error)}"),
           ("max ULP", figure(r.max_ulp)),
           ("rtol / atol", f"{figure(r.rtol)} / {figure(r.atol)}"),
           ("observation", r.observation_id)]
    dl = join(fill("<div><dt>$k</dt><dd>$v</dd></div>", k=k, v=v) for k, v in facts)
    rep_dl = join(fill("<div><dt>$k</dt><dd>$v</dd></div>", k=k, v=v) for k, v in rep)
    if e.localized:
        origin = join(fill('<li><span class="tool">$tool</span> $summary$origins$repro '
                           '<span class="small">(observation <code>$oid</code>)</span></li>',
                           tool=loc.tool, summary=loc.summary, oid=loc.observation_id[:16],
                           repro=fill(' <span class="small">repro: <code>gero replay $d'
                                      '</code></span>', d=loc.repro) if loc.repro else Html(""),
                           origins=fill("<ul>$o</ul>", o=join(
                               fill("<li>$line</li>", line=x) for x in loc.origins))
                           if loc.origins else Html(""))
                      for loc in e.localized)
        origin = fill("<ul class=\"plain\">$o</ul>", o=origin)
    else:
        origin = Html('<p class="small">Not localized: no <code>localize/</code> or '
                      '<code>blame/</code> result is stored with its members\' evidence.</p>')
    if e.analysis is not None:
        a = e.analysis
        label = (f"Error histogram of the representative: log10 |a − r| by decade over "
                 f"{count(a.element_count)} elements")
        figures = (f"{count(a.element_count)} elements, {count(a.zero_error)} exactly equal, "
                   f"{count(a.out_of_tolerance)} out of tolerance"
                   + (f", {count(a.nan_mismatch)} with NaN" if a.nan_mismatch else "")
                   + (f", {count(a.inf_mismatch)} with mismatched inf" if a.inf_mismatch
                      else ""))
        picture = fill('<figure class="figure">$svg<figcaption>$figures. Bars past the tolerance '
                       'line (atol + rtol · median |reference|) are hatched red.'
                       '</figcaption></figure>$worst', svg=_histogram_svg(a, label),
                       figures=figures, worst=_worst_elements(a))
    else:
        picture = fill('<p class="small">No error histogram: $why.</p>',
                       why=e.analysis_note or "no tensors")
    return fill("""<article class="finding" id="finding-$i" aria-labelledby="finding-$i-h">
<h3 id="finding-$i-h"><span class="rank">#$i</span> $cls $status<span class="title">$title</span>
</h3>
<dl class="facts">$facts</dl>
<details open><summary>Representative (worst) observation</summary><dl class="rep">$rep</dl>
</details>
<h4>Localized origin</h4>$origin
<h4>Error histogram</h4>$picture
<h4>Evidence</h4>$downloads
<h4>Reproduce</h4>
<p class="small">From any folder: the data root's path is absolute. The bundle is the whole
case (every path's outputs too) for a machine without the data root:
<code>gero replay FILE.tar.gz</code>.</p>
<pre><code>$replay
$bundle</code></pre>
</article>""", i=str(i), cls=class_label(f.result), status=status, title=f.title, facts=dl,
                rep=rep_dl, origin=origin, picture=picture, replay=e.replay_command,
                bundle=e.bundle_command, downloads=_downloads(e.downloads))


def _size(n: int) -> str:
    if n < 1024:
        return f"{n:,} B"
    return f"{n / 1024:.1f} KiB" if n < 1024 ** 2 else f"{n / 1024 ** 2:.1f} MiB"


_MANIFEST_WORDS = {True: "as the manifest records it", False: "differs from the manifest",
                   None: "the manifest records its members"}


def _downloads(files: tuple[DownloadFile, ...]) -> Html:
    """The representative's graph, inputs and manifest beside the report, each with its
    SHA-256 (``sha256sum FILE`` prints the same)."""
    if not files:
        return Html('<p class="small">No evidence to download: this observation kept no '
                    'evidence directory, or the report was rendered without writing it.</p>')
    rows = join(fill('<tr><td><a href="$href" download>$name</a></td><td>$label</td>'
                     '<td class="n">$size</td><td><code class="sha">$sha</code></td>'
                     '<td class="small">$manifest</td></tr>', href=f.href, name=f.name,
                     label=f.label, size=_size(f.size), sha=f.sha256,
                     manifest="" if f.label == "manifest" else _MANIFEST_WORDS[f.manifest])
                for f in files)
    return fill('<div class="scroll"><table class="files"><thead><tr><th scope="col">File</th>'
                '<th scope="col">What</th><th scope="col" class="n">Size</th>'
                '<th scope="col">SHA-256</th><th scope="col">Manifest</th></tr></thead>'
                '<tbody>$rows</tbody></table></div>', rows=rows)


def _finding_list(items: Iterable[Finding], label: str) -> Html:
    rows = join(fill("<tr><td><code>$id</code></td><td>$cls</td><td>$title</td>"
                     "<td class=\"n\">$n</td></tr>", id=f.finding_id, cls=class_label(f.result),
                     title=f.title, n=count(f.observations)) for f in items)
    return fill('<div class="scroll"><table><caption>$label</caption><thead><tr>'
                '<th scope="col">Finding</th><th scope="col">Class</th><th scope="col">Title</th>'
                '<th scope="col" class="n">Observations</th></tr></thead><tbody>$rows</tbody>'
                '</table></div>', label=label, rows=rows)


def _baseline(r: RunReport) -> Html:
    if r.baseline_run_id is None:
        why = r.baseline_problem or "no earlier run of this suite in the data root, and no " \
                                    "--baseline given"
        return fill('<section id="baseline" aria-labelledby="baseline-h"><h3 id="baseline-h">'
                    'Against a baseline</h3><p>Not compared: $why.</p></section>', why=why)
    new = sum(e.finding.status == "new" for e in r.findings)
    still = sum(e.finding.status == "still" for e in r.findings)
    parts = [fill("<p>Against run <code>$b</code>: <strong>$new new</strong>, $still still, "
                  "<strong>$gone gone</strong>$unresolved. A finding is gone only when every "
                  "observation slot that showed it ran again here and passed.</p>",
                  b=r.baseline_run_id, new=str(new), still=str(still), gone=str(len(r.gone)),
                  unresolved=f", {len(r.unresolved)} not resolved" if r.unresolved else "")]
    if r.gone:
        parts.append(_finding_list(r.gone, "Gone: their cases ran again and no longer show them"))
    if r.unresolved:
        parts.append(_finding_list(r.unresolved, "Not resolved: absent here, but not every "
                                   "case that showed them ran again (not assessed)"))
    return fill('<section id="baseline" aria-labelledby="baseline-h"><h3 id="baseline-h">'
                'Against a baseline</h3>$body</section>', body=join(parts))


def _findings(r: RunReport) -> Html:
    baseline = r.baseline_run_id is not None
    if not r.findings:
        body = Html("<p>No findings: every observation of this run is within contract.</p>")
    else:
        rows: list[Html] = []
        for i, e in enumerate(r.findings, 1):
            if not e.finding.assessable and (i == 1 or r.findings[i - 2].finding.assessable):
                rows.append(Html('<tr class="divider" id="apart"><th colspan="6" '
                                 'scope="rowgroup">Counted apart: cannot be assessed by '
                                 'construction (no runtime is judged on these rows)</th></tr>'))
            why = APART_LABELS.get(e.finding.cannot_assess, "")
            rows.append(fill(
                "<tr$cls><td class=\"n\">$i</td><td>$label</td><td><a href=\"#finding-$i\">"
                "$title</a>$why</td><td class=\"n\">$n</td><td class=\"n\">$cases</td>"
                "<td>$status</td></tr>", i=str(i), label=class_label(e.finding.result),
                cls=Html(' class="apart"') if why else Html(""), title=e.finding.title,
                why=fill('<br><span class="small">$w</span>', w=why) if why else Html(""),
                n=count(e.finding.observations), cases=count(e.finding.cases),
                status=e.finding.status or "—"))
        index = join(rows)
        cards = join(_finding_card(i, e, baseline) for i, e in enumerate(r.findings, 1))
        body = fill('<div class="scroll"><table class="index"><thead><tr><th scope="col">#</th>'
                    '<th scope="col">Class</th><th scope="col">Finding</th>'
                    '<th scope="col" class="n">Observations</th><th scope="col" class="n">'
                    'Cases</th><th scope="col">Status</th></tr></thead><tbody>$index</tbody>'
                    '</table></div>$cards', index=index, cards=cards)
    apart = sum(not e.finding.assessable for e in r.findings)
    lead = (f"{count(r.non_passed)} non-passed observation(s) in {len(r.findings)} finding(s): "
            "what a user acts on first, worst first"
            + (f", then, counted apart, the {apart} that cannot be assessed by construction"
               if apart else "")
            + ". A finding is a cause, not a row: every non-passed observation belongs "
            "to exactly one. Each representative's graph, inputs and manifest are downloads "
            "beside this page.")
    return fill("""<section id="findings" aria-labelledby="findings-h">
<h2 id="findings-h"><span class="num">07</span> Evidence workspace: find the signal</h2>
<p>$lead</p>$body$baseline</section>""", lead=lead, body=body, baseline=_baseline(r))


def _segment_id(op_index: int, result: str) -> str:
    return f"op-{op_index}-{result}"


def _bar(op_index: int, bar: OperationBar) -> Html:
    total = bar.total or 1
    shown = [s for s in bar.segments if s.count]
    widths = [max(100.0 * s.count / total, MIN_SEGMENT) for s in shown]
    scale = 100.0 / (sum(widths) or 1)
    rects: list[Html] = []
    x = 0.0
    for s, w in zip(shown, widths, strict=True):
        w *= scale
        rects.append(fill('<a href="#$id"><rect x="$x%" y="0" width="$w%" height="22" '
                          'fill="url(#fill-$c)"><title>$tip</title></rect></a>',
                          id=_segment_id(op_index, s.result), x=f"{x:.3f}", w=f"{w:.3f}",
                          c=s.result, tip=f"{bar.op_type}: {count(s.count)} "
                          f"{CLASS_NAMES[s.result].lower()}"))
        x += w
    words = join((fill('<a href="#$id">$n $name</a>', id=_segment_id(op_index, s.result),
                       n=count(s.count), name=CLASS_NAMES[s.result].lower()) for s in shown),
                 " · ")
    aria = f"{bar.op_type}: " + ", ".join(f"{count(s.count)} {CLASS_NAMES[s.result].lower()}"
                                          for s in shown)
    return fill('<li class="op" id="op-$i"><span class="op-name">$op</span>'
                '<svg class="bar" width="100%" height="22" role="img" aria-label="$aria">'
                '$rects</svg><span class="op-counts">$words</span></li>',
                i=str(op_index), op=bar.op_type, aria=aria, rects=join(rects), words=words)


def _row(row: EvaluationRow) -> Html:
    details = row.details if len(row.details) <= MAX_DETAILS \
        else row.details[:MAX_DETAILS - 1] + "…"
    return fill("<tr><td>$case</td><td>$input</td><td><code>$opt</code></td>"
                "<td class=\"n\">$err</td><td>$result</td><td><span class=\"check\">$check"
                "</span> $details</td></tr>", case=row.case,
                input=f"{row.dtype} {row.input_shapes}", opt=row.optimization,
                err=num(row.max_abs_error), result=CLASS_NAMES.get(row.result, row.result),
                check=row.check,
                details=details)


def _segment_section(op_index: int, bar: OperationBar, s: Segment, per: int) -> Html:
    return fill("""<section class="segment" id="$id" aria-labelledby="$id-h">
<h3 id="$id-h">$op · $cls <span class="small">$which $shown of $n$order</span></h3>
<div class="scroll"><table><thead><tr><th scope="col">Operation / test case</th>
<th scope="col">Input</th><th scope="col">Optimization</th>
<th scope="col" class="n">Max abs. error</th><th scope="col">Result</th>
<th scope="col">Details</th></tr></thead><tbody>$rows</tbody></table></div>
<p class="small">Every row: <code>$export</code> · <a href="#op-$i">back to the bar</a></p>
</section>""", id=_segment_id(op_index, s.result), op=bar.op_type, cls=class_label(s.result),
                which="worst" if any(w.max_abs_error is not None for w in s.worst) else "first",
                order=", largest max abs. error first" if any(
                    w.max_abs_error is not None for w in s.worst) else " (no error figure)",
                shown=str(min(per, s.count)), n=count(s.count), rows=join(map(_row, s.worst)),
                export=s.export_command, i=str(op_index))


def _operations(r: RunReport) -> Html:
    bars = join(_bar(i, b) for i, b in enumerate(r.bars, 1))
    segments = join(_segment_section(i, b, s, r.rows_per_segment)
                    for i, b in enumerate(r.bars, 1) for s in b.segments if s.count)
    return fill("""<section id="operations" aria-labelledby="operations-h">
<h2 id="operations-h"><span class="num">04</span> Precision across operations</h2>
<p>Observed outcomes, grouped by operation. Every segment links to the underlying
evaluations.</p>$legend
<ul class="bars">$bars</ul>
<p class="small">Segments under $min % of a bar are drawn at $min % so they stay visible; the
counts beside each bar are exact.</p>
<h3>The evaluations behind each segment</h3>$segments</section>""", legend=_legend(),
                bars=bars, segments=segments, min=f"{MIN_SEGMENT:g}")


def _timing(r: RunReport) -> Html:
    runtimes = sorted({b for by in r.runtime_medians.values() for b in by})
    several = len(runtimes) > 1
    heads = join(fill('<th scope="col" class="n">$name median</th>', name=runtime_name(b))
                 for b in runtimes) if several else Html(
        '<th scope="col" class="n">Runtime median</th>')
    rows = []
    for o in r.operations:
        by = r.runtime_medians.get(o.op_type, {})
        cells = join(fill('<td class="n">$v</td>', v=ms(by.get(b))) for b in runtimes) \
            if several else fill('<td class="n">$v</td>', v=ms(o.runtime_median_ms))
        rows.append(fill("<tr><td>$op</td><td class=\"n\">$pairs</td>$cells"
                         "<td class=\"n\">$ref</td></tr>", op=o.op_type,
                         pairs=count(o.measured_pairs), cells=cells,
                         ref=ms(o.reference_median_ms)))
    settings = join(fill("<tr><td>$name</td><td><code>$setting</code></td><td class=\"n\">$n"
                         "</td><td class=\"n\">$build</td><td class=\"n\">$run</td></tr>",
                         name=runtime_name(t.backend), setting=t.optimization, n=count(t.cases),
                         build=ms(t.build_median_ms), run=ms(t.run_median_ms))
                    for t in r.timings)
    return fill("""<section id="timing" aria-labelledby="timing-h">
<h2 id="timing-h"><span class="num">05</span> Inference time, with context</h2>
<p>Median of per-case medians, milliseconds. Includes Python call overhead; excludes session
construction. The reference evaluator is a correctness implementation, so these timings are not
a production speed ranking: <strong>context, not a ranking</strong>.</p>
<div class="scroll"><table><thead><tr><th scope="col">Operation</th>
<th scope="col" class="n">Measured pairs</th>$heads<th scope="col" class="n">Reference median</th>
</tr></thead><tbody>$rows</tbody></table></div>
<p class="small">Measured pairs: cases where ONNX Runtime and the reference path both produced a
timing.$per</p>
<h3>Session build and run per runtime setting</h3>
<div class="scroll"><table><thead><tr><th scope="col">Runtime</th><th scope="col">Setting</th>
<th scope="col" class="n">Cases</th><th scope="col" class="n">Build median</th>
<th scope="col" class="n">Run median</th></tr></thead><tbody>$settings</tbody></table></div>
</section>""", heads=heads, rows=join(rows), settings=settings,
                per=" Each runtime's median is over its own comparison rows, every setting "
                    "together." if several else "")


def _scope(r: RunReport) -> Html:
    synthetic = str(r.record.get("suite")) in ("synthetic", "all")
    suite = Html("""<p>The synthetic suite measures CPU execution on seeded synthetic graphs using
opset 19 / IR 10. QuantizeLinear and DynamicQuantizeLinear are excluded. DequantizeLinear remains
covered. CUDA, model-level accuracy and global batch metrics are outside this run.</p>""") \
        if synthetic else Html("")
    problems = join(fill("<li>$p</li>", p=p) for p in r.problems)
    problems_html = fill('<h3>Problems met while reading</h3><ul>$p</ul>', p=problems) \
        if r.problems else Html("")
    return fill("""<section id="scope" aria-labelledby="scope-h">
<h2 id="scope-h">A bounded, reproducible scope</h2>
<div class="principles">
<div><h3>Keep the mathematics honest</h3><p>Probabilities must be finite and strictly within
[0, 1]. Their sum uses a dtype-specific tolerance. A fully masked row returns exactly zero.
LayerNorm variance includes epsilon.</p><p><code>Var(normalized) ≈ v / (v + ε)</code></p></div>
<div><h3>Compare independent paths</h3><p>Run identical graphs in every runtime under test and
the official ReferenceEvaluator. Check algebraic graph variants and analytic NumPy float64
formulas. Agreement alone is insufficient; matching NaN outputs fail.</p>
<p><code>NaN == NaN is never a passing result</code></p></div>
<div><h3>Preserve the evidence</h3><p>Each case keeps the original graph, inputs and a SHA-256
manifest. Observations retain backend versions, output hashes, exact tolerances and session
settings. Repeated identical observations are deduplicated.</p>
<p><code>gero replay ARTIFACT_DIR</code></p></div>
</div>$suite
<p>Float64 formulas are diagnostic checks, not arbitrary-precision proofs. A passing finite
sample does not certify every possible input.</p>
<p>This page summarises run <code>$run</code>: counts, findings, and the worst $per rows of each
segment. Every observation, with its versions, output hashes, exact tolerance and session
settings, is in the data root <code>$root</code> (<code>gero tui</code>,
<code>gero export</code>).</p>
$problems</section>""", suite=suite, run=r.run_id, per=str(r.rows_per_segment),
                root=str(r.data_root), problems=problems_html)


_CSS = """
:root{--ink:#1b1f24;--muted:#57606a;--line:#d0d7de;--soft:#f6f8fa;--accent:#0b5cad}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
color:var(--ink);background:#fff;-webkit-print-color-adjust:exact;print-color-adjust:exact}
main,header{max-width:1180px;margin:0 auto;padding:0 24px}
.hero{padding-top:18px;padding-bottom:4px;border-bottom:1px solid var(--line)}
.kicker{letter-spacing:.12em;text-transform:uppercase;font-weight:700;color:var(--accent);margin:0}
h1{font-size:28px;margin:.2em 0}h1 code{font-size:22px}
h2{font-size:22px;margin:1.3em 0 .4em;border-bottom:2px solid var(--ink);padding-bottom:4px}
h3{font-size:17px;margin:1.3em 0 .4em}h4{font-size:14px;margin:1em 0 .3em;color:var(--muted);
text-transform:uppercase;letter-spacing:.06em}
.num{color:var(--muted);font-weight:400;margin-right:.4em}
.lede{font-size:17px;margin:.2em 0 .6em}.meta{color:var(--muted);margin:.1em 0}
code,pre{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:13px}
pre{background:var(--soft);border:1px solid var(--line);padding:10px;overflow-x:auto;
white-space:pre-wrap;word-break:break-all}
nav ul{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:4px 18px}
a{color:var(--accent)}a:focus{outline:3px solid #f2b134;outline-offset:1px}
.compare{display:grid;grid-template-columns:1fr auto 1fr;gap:16px;align-items:center;
background:var(--soft);border:1px solid var(--line);padding:14px}
.formula code{font-size:15px;white-space:nowrap}.tag{margin:0;font-weight:700;
text-transform:uppercase;letter-spacing:.08em;color:var(--muted);font-size:12px}
ul.plain{list-style:none;padding:0;margin:.2em 0}.ref-note{color:var(--muted);font-size:13px}
table{border-collapse:collapse;width:100%;margin:.3em 0;font-size:13.5px}
th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
th{background:var(--soft)}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
caption{text-align:left;font-weight:600;padding:4px 0}
.scroll{overflow-x:auto}
tr.override td{background:#fff4d6}
.kv{display:inline-block;margin-right:8px;font-family:ui-monospace,monospace;font-size:12px}
dl.env,dl.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:2px 18px;
margin:.3em 0}
dl.rep{margin:.3em 0}dl.rep div{padding:1px 0}
dl div{display:flex;gap:8px}dt{color:var(--muted);min-width:96px}dd{margin:0;word-break:break-word}
.tiles{display:grid;grid-template-columns:repeat(4,1fr);gap:12px}
.tile{border:1px solid var(--line);padding:12px}.tile-label{margin:0;font-weight:600}
.tile-n{font-size:30px;margin:0;font-variant-numeric:tabular-nums}.tile-note{margin:0;color:var(--muted)}
.note{display:flex;gap:12px;border:1px solid var(--line);border-left:4px solid var(--accent);
padding:10px 14px;margin:20px 0;background:#f3f8fe;color:var(--ink)}
.note .i{font-weight:700;font-style:italic;border:2px solid var(--accent);border-radius:50%;
width:24px;height:24px;text-align:center;line-height:20px;margin:2px 0;flex:none;
color:var(--accent)}
.note p{margin:.2em 0}
.cls{display:inline-flex;align-items:center;gap:4px;white-space:nowrap;font-weight:600}
.sw{display:inline-block;flex:none;width:13px;height:13px;border:1px solid #222;
vertical-align:-2px;margin-right:5px}
.sw-passed{background:#3f8f4a}
.sw-divergence{background:repeating-linear-gradient(45deg,#8c5a00 0 2px,#f2b134 2px 5px)}
.sw-contract_issue{background:repeating-linear-gradient(45deg,#7d1414 0 1px,transparent 1px 4px),
repeating-linear-gradient(-45deg,#7d1414 0 1px,#e46a6a 1px 4px)}
.sw-execution{background:radial-gradient(circle,#444 0 1.4px,#c9c9c9 1.6px) 0 0/5px 5px}
.defs{position:absolute;width:0;height:0;overflow:hidden}
.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:6px 22px}
.pattern{color:var(--muted);font-weight:400;font-size:12px}
.bars{list-style:none;padding:0;margin:.5em 0}
.op{display:grid;grid-template-columns:200px minmax(200px,1fr);gap:2px 12px;padding:5px 0;
border-bottom:1px dotted var(--line)}
.op-name{font-weight:600;word-break:break-all}.bar{display:block;outline:1px solid #222}
.op-counts{grid-column:2;font-size:13px}
.finding{border:1px solid var(--line);padding:6px 16px 12px;margin:14px 0}
.finding h3{display:flex;flex-wrap:wrap;gap:6px 10px;align-items:baseline}
.rank{color:var(--muted)}.title{flex-basis:100%;font-weight:600}
.status{border:1px solid var(--ink);padding:0 6px;font-size:12px;text-transform:uppercase}
.status-new{background:#fff4d6;font-weight:700}
.tool{font-weight:700}
.figure{margin:0}.hist{width:100%;max-width:680px;height:auto;display:block}
.svg-n{font:11px sans-serif;text-anchor:middle}.svg-l{font:11px sans-serif}
.tol-line{stroke:#7d1414;stroke-width:1.5;stroke-dasharray:5 3}
figcaption,.small{font-size:12.5px;color:var(--muted)}
.check{font-family:ui-monospace,monospace;font-size:12px;color:var(--muted)}
details summary{cursor:pointer;font-weight:600;margin:.4em 0}
.segment{margin-top:10px}
.hero .meta.command code{word-break:break-all}
.tiles{grid-template-columns:repeat(auto-fit,minmax(170px,1fr))}
.tile-apart{background:var(--soft)}.tile-apart .tile-n{color:var(--muted)}
.sw-apart{background:radial-gradient(circle,#8a8a8a 0 1px,#f0f0f0 1.2px) 0 0/4px 4px}
tr.apart td{color:var(--muted)}tr.divider th{background:#eef1f4;font-weight:600}
table.files code.sha{font-size:11.5px;word-break:break-all}
.svg-slant{text-anchor:end}
nav ul{gap:2px 14px;font-size:14px;margin:.3em 0}.hero h1{margin:.1em 0}
.tile{padding:8px 12px}.tile-n{font-size:26px;line-height:1.25}
.tile-note{font-size:13px;line-height:1.35}#counts h2{margin-top:.7em}
.principles{display:grid;grid-template-columns:repeat(3,1fr);gap:14px}
.principles>div{border:1px solid var(--line);padding:4px 14px}.principles h3{margin-top:.6em}
footer{max-width:1180px;margin:30px auto;padding:12px 24px;border-top:1px solid var(--line);
color:var(--muted);font-size:12.5px}
table.verdict td.v-safe strong{color:#1f6f2b}table.verdict td.v-off strong{color:#8c2a00}
table.verdict td.v-cannot-run strong{color:#5a5a5a}table.verdict td.v-off{background:#fff4d6}
@media (max-width:800px){.tiles{grid-template-columns:1fr 1fr}.compare{grid-template-columns:1fr}
.principles{grid-template-columns:1fr}
.op{grid-template-columns:1fr}.op-counts{grid-column:1}}
"""


def render(report: RunReport) -> str:
    """The report as one HTML document (UTF-8 text)."""
    versions = ", ".join(f"{k} {v}" for k, v in report.generated_with.items())
    page = fill("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="$csp">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gero run report $run</title>
<style>$css</style></head>
<body>$patterns
$header
<main>
$verdicts
$counts
$comparison
$landing
$operations
$releases
$timing
$criteria
$note
$findings
$compared
$scope
</main>
<footer>Written by $versions from the data root <code>$root</code>. One self-contained file:
no script, no network resource.</footer>
</body></html>
""", landing=_landing(report), criteria=_criteria(report), compared=_compared(report),
        csp=CONTENT_SECURITY_POLICY, run=report.run_id, css=Html(_CSS), patterns=Html(_PATTERNS),
        header=_header(report), verdicts=_verdicts(report), comparison=_comparison(report),
        counts=_counts(report), note=Html(_NOTE), findings=_findings(report),
        operations=_operations(report), timing=_timing(report), scope=_scope(report),
        releases=release_section(report.releases),
        versions=versions or "gero", root=str(report.data_root))
    return str(page)

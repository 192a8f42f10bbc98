"""Screenshots of every view of the explorer, from a real run: SVG, and PNG when
``rsvg-convert`` is on PATH (apt: librsvg2-bin), under screenshots/; and of the run's HTML
report (``gero report``) as Chromium renders it, PNG (apt: chromium).

    .venv/bin/gero run --data-dir /tmp/shots-data --jobs 2
    .venv/bin/python scripts/screenshots.py --data-dir /tmp/shots-data [--out screenshots]
        [--only explorer|report] [--run ID] [--baseline RUN]

At 120×40: the overview, help, the run picker, the evaluations table (divergences and
contract issues, largest error first; then grouped, levels merged, a group selected; the
check column's frequency view), the export dialog, an evaluation's detail (fields,
histogram, side by side) and the per-operation histogram; at 80×24: the overview and the
table. The evaluation shown is the divergence (else any observation with evidence) with
the most elements, so that its views have something to show. A second run in the data
root gives the run picker more than one line.

The report (of ``--run`` or the newest, against ``--baseline`` or the previous run of its suite) at
1280 px wide: its top (the comparison), counts by class, the findings list, the first
finding with an error histogram, precision across operations, the rows behind one segment,
inference time, and the baseline section.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from textual.worker import WorkerCancelled

import gero
from gero.query.table import COLUMN_KEYS
from gero_tui.app.app import GeroApp
from gero_tui.app.screens.detail import DetailScreen

WIDE = (120, 40)
NARROW = (80, 24)
PICK = """
SELECT observation_id FROM obs
WHERE artifact_path <> '' AND actual_file <> '' AND "check" = 'agreement'
ORDER BY result = 'divergence' DESC, dtype = 'float16' DESC, element_count DESC,
         observation_id
LIMIT 1
"""
# The table as triage starts: what needs a look (divergences, contract issues), largest
# error first (the sort picker lists run order, then the columns).
SORT_BY_ERROR = ("s", "home", *["down"] * (1 + COLUMN_KEYS.index("max_abs_error")), "enter")


async def _settle(pilot: Any) -> None:
    """Wait for every query worker to finish and its result to be painted."""
    for _ in range(20):
        try:
            await pilot.app.workers.wait_for_complete()
        except WorkerCancelled:
            continue
        await pilot.pause()
        if not any(w.is_running for w in pilot.app.workers):
            await pilot.pause()
            break


class _Shooter:
    def __init__(self, app: GeroApp, pilot: Any, out: Path, suffix: str = "") -> None:
        self.app, self.pilot, self.out, self.suffix = app, pilot, out, suffix
        self.written: list[Path] = []

    async def keys(self, *keys: str) -> None:
        await self.pilot.press(*keys)
        await _settle(self.pilot)

    def shoot(self, name: str) -> None:
        path = self.app.save_screenshot(f"{name}{self.suffix}.svg", str(self.out))
        self.written.append(Path(path))


async def _wide(data_dir: Path, out: Path) -> list[Path]:
    app = GeroApp(data_dir)
    async with app.run_test(size=WIDE) as pilot:
        s = _Shooter(app, pilot, out)
        await _settle(pilot)
        s.shoot("overview")
        await s.keys("i")
        s.shoot("findings")
        await s.keys("w", "1", "e", "-", "2", "tab", "1", "e", "-", "3")
        s.shoot("findings-what-if")
        await s.keys("escape", "escape", "question_mark")
        s.shoot("help")
        await s.keys("escape", "p")
        s.shoot("run-picker")
        await s.keys("escape", "v", "2", "3", *SORT_BY_ERROR)
        s.shoot("evaluations")
        # One row per case and check (levels merged), its first group selected (space: every
        # row of the group), then the frequency of the check column.
        await s.keys("m", "space")
        s.shoot("evaluations-grouped")
        await s.keys("m", "m", *["right"] * COLUMN_KEYS.index("check"), "F")
        s.shoot("frequency")
        await s.keys("escape", *["left"] * COLUMN_KEYS.index("check"))
        await s.keys("e")
        s.shoot("export-dialog")
        await s.keys("escape")
        source = app.require_source()
        picked = source.query(PICK)
        if not picked:
            print("no observation with evidence: detail screenshots skipped")
            return s.written
        app.push_screen(DetailScreen(source, str(picked[0][0])))
        await _settle(pilot)
        for name, key in (("detail-fields", "f"), ("detail-histogram", "h"),
                          ("detail-side-by-side", "t"), ("detail-inputs", "n")):
            await s.keys(key)
            s.shoot(name)
        await s.keys("g")
        s.shoot("operation-histogram")
    return s.written


async def _narrow(data_dir: Path, out: Path) -> list[Path]:
    app = GeroApp(data_dir)
    async with app.run_test(size=NARROW) as pilot:
        s = _Shooter(app, pilot, out, suffix="-80x24")
        await _settle(pilot)
        s.shoot("overview")
        await s.keys("i")
        s.shoot("findings")
        await s.keys("escape", "v", "2", "3", *SORT_BY_ERROR)
        s.shoot("evaluations")
    return s.written


async def tutorial(data_dir: Path, out: Path, run_id: str | None, observation: str,
                   model_run: str | None = None) -> list[Path]:
    """The tutorial's steps (docs/tutorial.md) on its own run and finding, at 120×40: the
    overview, the Findings screen, the evaluation's histogram, side by side and inputs, its
    replay, and the error through the graph (``L``). ``observation`` is the finding's
    representative; ``model_run``, the tutorial's model run (its overview and findings)."""
    out.mkdir(parents=True, exist_ok=True)
    app = GeroApp(data_dir, run=run_id)
    async with app.run_test(size=WIDE) as pilot:
        s = _Shooter(app, pilot, out)
        await _settle(pilot)
        with gero.open_run(run_id, data_dir) as run:  # the finding's row, highlighted
            row = next(i for i, f in enumerate(run.findings())
                       if f.representative.observation_id.startswith(observation))
        s.shoot("tutorial-overview")
        await s.keys("i", *["down"] * row)
        s.shoot("tutorial-findings")
        source = app.require_source()
        found = source.query("SELECT observation_id FROM obs WHERE observation_id LIKE ?",
                             [observation + "%"])
        app.push_screen(DetailScreen(source, str(found[0][0])))
        await _settle(pilot)
        for name, key in (("tutorial-histogram", "h"), ("tutorial-side-by-side", "t"),
                          ("tutorial-inputs", "n")):
            await s.keys(key)
            s.shoot(name)
        await s.keys("f", "r")
        s.shoot("tutorial-replay")
        await s.keys("L")
        s.shoot("tutorial-localize")
    if model_run is not None:  # the tutorial's real model: its overview and findings
        app = GeroApp(data_dir, run=model_run)
        async with app.run_test(size=WIDE) as pilot:
            m = _Shooter(app, pilot, out)
            await _settle(pilot)
            m.shoot("tutorial-model-overview")
            await m.keys("i")
            m.shoot("tutorial-model-findings")
        s.written += m.written
    return s.written


async def shoot(data_dir: Path, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    return [*await _wide(data_dir, out), *await _narrow(data_dir, out)]


def _leading_spaces_to_offset(svg: str) -> str:
    """Move each text run's leading no-break spaces into its x position.

    Textual writes a space-led run (e.g. " · sort") as ``<text x=.. textLength=..>&#160;…``;
    rsvg-convert draws it without those spaces, so the PNG loses the gap before it.
    """

    def fix(match: re.Match[str]) -> str:
        attrs, body = match.group(1), match.group(2)
        lead = re.match(r"(?:&#160;)+", body)
        if lead is None:
            return match.group(0)
        count, rest = lead.end() // len("&#160;"), body[lead.end():]
        x = re.search(r' x="([0-9.]+)"', attrs)
        length = re.search(r' textLength="([0-9.]+)"', attrs)
        if x is None or length is None:
            return match.group(0)
        cells = count + len(re.sub(r"&#?\w+;", ".", rest))
        cell = float(length.group(1)) / cells
        attrs = attrs.replace(x.group(0), f' x="{float(x.group(1)) + count * cell:.1f}"')
        attrs = attrs.replace(length.group(0),
                              f' textLength="{float(length.group(1)) - count * cell:.1f}"')
        return f"<text{attrs}>{rest}</text>"

    return re.sub(r"<text([^>]*)>([^<]*)</text>", fix, svg)


# Textual's SVG puts each run of one style at its cell's x, a cell being 0.61 em; rsvg-convert
# ignores textLength and draws the run in its fallback monospace font (DejaVu Sans Mono,
# 1233/2048 em a glyph), so a long run fell short of the next and left a gap that read as
# a stray space (" ;"). Letter spacing makes up the difference.
CELL_EM = 0.61
GLYPH_EM = 1233 / 2048
FONT_PX = 20


def _cell_spacing(svg: str) -> str:
    spacing = (CELL_EM - GLYPH_EM) * FONT_PX
    return svg.replace("</style>", f"text {{ letter-spacing: {spacing:.3f}px; }}\n</style>", 1)


def to_png(svg: Path) -> Path | None:
    """Convert with rsvg-convert; None when it is not installed."""
    tool = shutil.which("rsvg-convert")
    if tool is None:
        return None
    png = svg.with_suffix(".png")
    with tempfile.NamedTemporaryFile("w", suffix=".svg", encoding="utf-8") as fixed:
        fixed.write(_cell_spacing(_leading_spaces_to_offset(svg.read_text(encoding="utf-8"))))
        fixed.flush()
        subprocess.run([tool, "--zoom", "1.5", "-o", str(png), fixed.name], check=True)
    return png


REPORT_WIDTH = 1280
REPORT_SHOTS = (
    ("report-top", None), ("report-counts", "#counts"), ("report-findings", "table.index"),
    ("report-operations", "#operations .bars"), ("report-timing", "#timing"),
    ("report-baseline", "#baseline"),
)


def shoot_report(data_dir: Path, out: Path, run_id: str | None = None,
                 baseline: str | None = None) -> list[Path]:
    """A run's report (the newest by default) as Chromium renders it, in PNGs; [] without
    chromium."""
    # The DevTools-pipe driver the report tests use (tests/support is not a package).
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
    from chromium import Browser, find_chromium

    if find_chromium() is None:
        print("no chromium on PATH: report screenshots skipped (apt-get install chromium)")
        return []
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        with gero.open_run(run_id, data_dir) as run:
            run.report(page, baseline=baseline)
            findings = run.findings()
        # the first divergence with evidence, so that its histogram shows
        pictured = next((i for i, f in enumerate(findings, 1)
                         if f.representative.artifact_path and f.result == "divergence"), 1)
        written: list[Path] = []
        with Browser(width=REPORT_WIDTH, height=900) as browser:
            browser.open(page)
            shots = [*REPORT_SHOTS, ("report-finding", f"#finding-{pictured}")]
            divergent = browser.nodes("section.segment[id$='-divergence']")
            if divergent:  # the rows behind the first divergence segment
                shots.append(("report-segment", f"#{browser.attribute(divergent[0], 'id')}"))
            for name, selector in shots:
                path = out / f"{name}.png"
                if selector is None:
                    browser.screenshot(path, max_height=1500)
                else:
                    browser.screenshot(path, selector, max_height=2400)
                written.append(path)
        if browser.requests:
            raise SystemExit(f"the report made network requests: {browser.requests}")
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("screenshots"))
    parser.add_argument("--only", choices=("explorer", "report", "tutorial"), default=None)
    parser.add_argument("--observation", default=None,
                        help="--only tutorial: the finding's representative observation")
    parser.add_argument("--model-run", default=None,
                        help="--only tutorial: the run of the tutorial's real model")
    parser.add_argument("--run", default=None, help="the report's run (default: the newest)")
    parser.add_argument("--baseline", default=None, metavar="RUN",
                        help="the report's baseline (default: the previous run of its suite)")
    args = parser.parse_args()
    if args.only == "tutorial":
        for svg in asyncio.run(tutorial(args.data_dir, args.out, args.run, args.observation,
                                       args.model_run)):
            print(svg, to_png(svg) or "(no PNG: install rsvg-convert)")
        return
    if args.only != "report":
        for svg in asyncio.run(shoot(args.data_dir, args.out)):
            png = to_png(svg)
            print(svg, png or "(no PNG: install rsvg-convert, e.g. apt-get install librsvg2-bin)")
    if args.only != "explorer":
        for png in shoot_report(args.data_dir, args.out, args.run, args.baseline):
            print(png)


if __name__ == "__main__":
    main()

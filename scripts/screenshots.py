"""Screenshots of the explorer from a real run: the overview and the filtered evaluations
table at 120×40 and 80×24, as SVG and (with ``rsvg-convert`` on PATH) PNG under screenshots/.

    .venv/bin/gero run --data-dir /tmp/ui-data
    .venv/bin/python scripts/screenshots.py --data-dir /tmp/ui-data [--out screenshots]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
from pathlib import Path
from typing import Any

from textual.worker import WorkerCancelled

from gero_tui.app.app import GeroApp

SIZES = {"": (120, 40), "-80x24": (80, 24)}


async def _settle(pilot: Any) -> None:
    """Wait for every query worker to finish and its result to be painted."""
    for _ in range(20):
        try:
            await pilot.app.workers.wait_for_complete()
        except WorkerCancelled:
            continue
        await pilot.pause()
        if not any(w.is_running for w in pilot.app.workers):
            break


async def shoot(data_dir: Path, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for suffix, size in SIZES.items():
        app = GeroApp(data_dir)
        async with app.run_test(size=size) as pilot:
            await _settle(pilot)
            written.append(Path(app.save_screenshot(f"overview{suffix}.svg", str(out))))
            # The table, filtered to what needs a look, largest error first.
            await pilot.press("v")
            await _settle(pilot)
            await pilot.press("2", "3", "4", "s", *["down"] * 6, "enter")
            await _settle(pilot)
            written.append(Path(app.save_screenshot(f"evaluations{suffix}.svg", str(out))))
    return written


def to_png(svg: Path) -> Path | None:
    """Convert with rsvg-convert (apt: librsvg2-bin); None when it is not installed."""
    tool = shutil.which("rsvg-convert")
    if tool is None:
        return None
    png = svg.with_suffix(".png")
    subprocess.run([tool, "--zoom", "1.5", "-o", str(png), str(svg)], check=True)
    return png


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("screenshots"))
    args = parser.parse_args()
    for svg in asyncio.run(shoot(args.data_dir, args.out)):
        png = to_png(svg)
        print(svg, png or "(no PNG: install rsvg-convert, e.g. apt-get install librsvg2-bin)")


if __name__ == "__main__":
    main()

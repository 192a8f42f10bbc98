"""Screenshots of the evaluation detail (fields, histogram, side by side) and the
per-operation histogram, from a real run: SVG files under screenshots/.

    .venv/bin/python scripts/detail_screenshots.py --data-dir /tmp/p2-data [--out screenshots]

The evaluation shown is the divergence (else any observation with evidence) with the most
elements, so the views have something to show.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from gero_tui.app.app import GeroApp
from gero_tui.app.screens.detail import DetailScreen
from gero_tui.app.screens.op_histogram import OpHistogramScreen

PICK = """
SELECT observation_id, op_type FROM obs
WHERE artifact_path <> '' AND actual_file <> '' AND "check" = 'agreement'
ORDER BY result = 'divergence' DESC, dtype = 'float16' DESC, element_count DESC,
         observation_id
LIMIT 1
"""


async def _settle(pilot) -> None:  # type: ignore[no-untyped-def]
    for _ in range(10):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def shoot(data_dir: Path, out: Path, size: tuple[int, int] = (120, 40)) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    app = GeroApp(data_dir)
    async with app.run_test(size=size) as pilot:
        await _settle(pilot)
        source = app.require_source()
        oid, op = source.query(PICK)[0]
        app.push_screen(DetailScreen(source, oid))
        await _settle(pilot)
        for name, key in (("detail-fields", None), ("detail-histogram", "h"),
                          ("detail-side-by-side", "t")):
            if key:
                await pilot.press(key)
                await _settle(pilot)
            written.append(Path(app.save_screenshot(f"{name}.svg", str(out))))
        app.push_screen(OpHistogramScreen(source, op))
        await _settle(pilot)
        written.append(Path(app.save_screenshot("operation-histogram.svg", str(out))))
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("screenshots"))
    args = parser.parse_args()
    for path in asyncio.run(shoot(args.data_dir, args.out)):
        print(path)


if __name__ == "__main__":
    main()

"""Snapshots of the detail views (fields, histogram, side by side and its next layout), the
per-operation histogram and the export dialog, at 80×24 and 120×40, over deterministic
hand-made data."""

from __future__ import annotations

from pathlib import Path

import pytest
from detail_data import build
from detail_harness import Harness

SIZES = [(80, 24), (120, 40)]
VIEWS = {
    "fields": ("detail", "divergence", ("f",)),
    "histogram": ("detail", "divergence", ()),  # where the detail opens
    "tensors": ("detail", "divergence", ("t",)),  # side by side at both sizes
    "tensors_layout": ("detail", "divergence", ("t", "l")),  # the next layout

    "contract": ("detail", "contract", ("t",)),
    "op_histogram": ("op", "Softmax", ()),
    "export": ("export", "divergence", ()),
}


@pytest.fixture(scope="module")
def fixture_root(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("detail-snapshots")
    return root, build(root)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.slow
def test_detail_view_snapshot(snap_compare, fixture_root: tuple[Path, dict[str, str]],  # type: ignore[no-untyped-def]
                              view: str, size: tuple[int, int]) -> None:
    root, ids = fixture_root
    screen, target, keys = VIEWS[view]
    app = Harness(root, screen, ids.get(target, target), directory=Path("/exports"))

    async def settle(pilot) -> None:  # type: ignore[no-untyped-def]
        for _ in range(5):
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()

    assert snap_compare(app, press=keys, terminal_size=size, run_before=settle)

"""The Findings screen's first paint on a large data root, in a real terminal (tmux).

Per start: the explorer opens on the overview; the clock for the findings starts when the
overview shows its class counts, `i` is pressed at once, and stops when the findings list
is drawn (its summary line and first row). Also from process start with
``--screen findings``. Polls ``tmux capture-pane`` every 5 ms.

    .venv/bin/python bench/make_million.py --from DATA --to /tmp/gero-million
    .venv/bin/python bench/findings_screen_bench.py --data-dir /tmp/gero-million
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import explorer_bench
from explorer_bench import tmux, wait_for

SESSION = explorer_bench.SESSION = "gero-findings-bench"  # not the explorer bench's session

COUNTS = re.compile(r"Within contract(?:[^\n]*\n\s*|\s+)[\d,]+")
"""The overview's first figure: beside its title (narrow) or under the card titles (wide)."""


def findings_drawn(screen: str) -> bool:
    """The summary line and at least one row (a row starts with its class's short word)."""
    rows = screen.split("finding\n", 1)[-1] if "findings cover" in screen else ""
    return any(re.match(r"\s*(div|exec|contr)\s+[\d,]+", line) for line in rows.splitlines())


def start(command: str, width: str, height: str) -> None:
    """A fresh explorer in the bench's tmux session (wait_for times from the call)."""
    subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)
    time.sleep(0.5)
    tmux("new-session", "-d", "-s", SESSION, "-x", width, "-y", height, command)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/gero-million"))
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--size", default="120x40")
    args = parser.parse_args()
    width, height = args.size.split("x")
    # The interpreter running the bench, with its PYTHONPATH (a worktree's sources).
    path = os.environ.get("PYTHONPATH")
    prefix = f"env PYTHONPATH={shlex.quote(path)} " if path else ""
    command = (f"{prefix}{shlex.quote(sys.executable)} -m gero_tui tui "
               f"--data-dir {shlex.quote(str(args.data_dir))}")
    overview, after, direct = [], [], []
    for _ in range(args.starts):
        start(command, width, height)
        overview.append(wait_for(lambda s: COUNTS.search(s) is not None))
        pressed = time.perf_counter()
        tmux("send-keys", "-t", SESSION, "i")
        wait_for(findings_drawn)
        after.append(time.perf_counter() - pressed)
        start(f"{command} --screen findings", width, height)
        direct.append(wait_for(findings_drawn))
    subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)
    for name, times in (("overview with counts, from start", overview),
                        ("findings drawn, from i pressed on the overview's paint", after),
                        ("findings drawn, from start with --screen findings", direct)):
        print(f"{name:55s} median {statistics.median(times):.3f} s "
              f"(min {min(times):.3f}, max {max(times):.3f}, {len(times)} starts)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Explorer speed and memory on a large data root, measured in a real terminal (tmux).

From process start: first paint of the evaluations table with data; then the median time
from a filter or sort key press until the table shows the new rows; and the app's
resident memory (VmHWM, the peak, from /proc). Polls ``tmux capture-pane`` every 5 ms.
A sort chosen in the picker (``s``) is timed from the key that chooses it, once the
picker is on screen (opening the picker is not the sort).

    .venv/bin/python bench/make_million.py            # once: /tmp/gero-million
    .venv/bin/python bench/explorer_bench.py [--data-dir /tmp/gero-million]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

SESSION = f"gero-bench-{os.getpid()}"
"""Per process: two benches on one machine (one tmux server) must not kill each other's."""
POLL_S = 0.005


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


def pane() -> str:
    return tmux("capture-pane", "-p", "-t", SESSION)


def wait_for(predicate: Callable[[str], bool], timeout: float = 30.0) -> float:
    """Seconds until the pane satisfies ``predicate``."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if predicate(pane()):
            return time.perf_counter() - start
        time.sleep(POLL_S)
    raise TimeoutError(f"pane never matched; last:\n{pane()}")


def status_line(screen: str) -> str:
    return next((line for line in screen.splitlines() if " rows" in line), "")


def app_pid() -> int:
    shell = tmux("display", "-p", "-t", SESSION, "#{pane_pid}").strip()
    out = subprocess.run(["pgrep", "-P", shell], capture_output=True, text=True).stdout.split()
    return int(out[0]) if out else int(shell)


def rss_mb(pid: int) -> tuple[float, float]:
    """(current, peak) resident memory in MB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text()
                  .splitlines() if ":" in line)
    return (int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024)


def change(keys: list[str], expect: Callable[[str], bool]) -> float:
    """Press keys; seconds until the status line shows the new result and rows are drawn.

    Keys before a "|" open a picker: they are pressed first, and the clock starts when
    the picker is on screen and the rest are pressed.
    """
    before = status_line(pane())
    if "|" in keys:
        cut = keys.index("|")
        tmux("send-keys", "-t", SESSION, *keys[:cut])
        wait_for(lambda s: "Sort by" in s)
        keys = keys[cut + 1:]
    start = time.perf_counter()
    tmux("send-keys", "-t", SESSION, *keys)
    while True:
        now = pane()
        line = status_line(now)
        if (line != before and expect(now) and "counting" not in line
                and "updating" not in line and "  …" not in now):
            return time.perf_counter() - start
        if time.perf_counter() - start > 30:
            raise TimeoutError(now)
        time.sleep(POLL_S)


def table_drawn(screen: str) -> bool:
    """The explorer's table has a row count and its first data row."""
    return " of " in status_line(screen) and "passed" in screen.split("Details", 1)[-1]


def start_and_paint(width: str, height: str, command: str,
                    drawn: Callable[[str], bool]) -> float:
    """Seconds from starting ``command`` in a fresh tmux session until the pane is ``drawn``
    (the first paint with data: for the explorer, a row count and the first data row)."""
    subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)
    time.sleep(0.5)
    start = time.perf_counter()
    tmux("new-session", "-d", "-s", SESSION, "-x", width, "-y", height, command)
    wait_for(drawn)
    return time.perf_counter() - start


def overview_drawn(screen: str) -> bool:
    """The overview shows its class counts (a figure under "Within contract")."""
    lines = screen.splitlines()
    at = next((i for i, line in enumerate(lines) if "Within contract" in line), None)
    return at is not None and at + 1 < len(lines) and lines[at + 1].strip()[:1].isdigit()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/gero-million"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--size", default="120x40")
    parser.add_argument("--paints", type=int, default=5, help="starts timed to first paint")
    parser.add_argument("--gero", type=Path, default=Path(sys.executable).parent / "gero",
                        help="the gero command to time (default: this interpreter's)")
    args = parser.parse_args()
    width, height = args.size.split("x")
    gero = args.gero
    command = f"{shlex.quote(str(gero))} tui --data-dir {shlex.quote(str(args.data_dir))}"
    paints = [start_and_paint(width, height, f"{command} --screen evaluations", table_drawn)
              for _ in range(args.paints)]
    print(f"first paint of the table with data: median {statistics.median(paints):.3f} s "
          f"(min {min(paints):.3f}, max {max(paints):.3f}, {len(paints)} starts)")
    overview = [start_and_paint(width, height, command, overview_drawn)
                for _ in range(args.paints)]
    print(f"first paint of the overview with its counts: median "
          f"{statistics.median(overview):.3f} s (min {min(overview):.3f}, "
          f"max {max(overview):.3f})")
    # The floor: a bare Textual app (bench/textual_floor_app.py) timed the same way.
    floor_app = Path(__file__).with_name("textual_floor_app.py")
    floor = f"{shlex.quote(sys.executable)} {shlex.quote(str(floor_app))}"
    floors = [start_and_paint(width, height, floor, lambda s: " of " in s and "passed" in s)
              for _ in range(args.paints)]
    print(f"  floor, a bare Textual app with a 40-row DataTable: median "
          f"{statistics.median(floors):.3f} s (min {min(floors):.3f}); gero adds "
          f"{statistics.median(paints) - statistics.median(floors):.3f} s to the table, "
          f"{statistics.median(overview) - statistics.median(floors):.3f} s to the overview")
    start_and_paint(width, height, f"{command} --screen evaluations", table_drawn)
    time.sleep(1)

    steps: list[tuple[str, list[str], Callable[[str], bool]]] = [
        ("class filter 2 on", ["2"], lambda s: "of " in status_line(s)),
        ("class filter 2 off", ["2"], lambda s: "of " in status_line(s)),
        ("class filter 4 on", ["4"], lambda s: "of " in status_line(s)),
        ("class filter 4 off", ["4"], lambda s: "of " in status_line(s)),
        ("sort by max abs. error", ["s", "|", "Home"] + ["Down"] * 7 + ["Enter"],
         lambda s: "Max abs. error" in status_line(s)),
        ("sort reverse", ["S"], lambda s: "sort:" in s),
        ("sort by case", ["s", "|", "Home", "Down", "Enter"],
         lambda s: "Operation" in status_line(s)),
        ("run order", ["s", "|", "Home", "Enter"], lambda s: "run order" in status_line(s)),
    ]
    # The grouping toggle (m): levels merged, dtypes merged, by finding, none; timed separately.
    grouping: list[tuple[str, list[str], Callable[[str], bool]]] = [
        ("grouping: levels merged", ["m"], lambda s: "levels merged" in status_line(s)),
        ("grouping: dtypes merged", ["m"], lambda s: "dtypes merged" in status_line(s)),
        ("grouping: by finding", ["m"], lambda s: "per finding" in status_line(s)),
        ("grouping: off", ["m"], lambda s: " in " not in status_line(s)),
    ]
    timings: dict[str, list[float]] = {}
    for _ in range(args.repeats):
        for name, keys, expect in steps:
            timings.setdefault(name, []).append(change(keys, expect))
    # Free text: type a word, then clear it.
    text_times = []
    for _ in range(args.repeats):
        tmux("send-keys", "-t", SESSION, "/")
        time.sleep(0.3)
        text_times.append(change(["e", "r", "f"], lambda s: "text: “erf”" in s))
        tmux("send-keys", "-t", SESSION, "Enter")
        time.sleep(0.3)  # the box takes the keys typed before enter, then x is a table key
        tmux("send-keys", "-t", SESSION, "x")
        time.sleep(1.0)
    timings["free text 'erf' (3 keys)"] = text_times
    all_times = [t for ts in timings.values() for t in ts]
    group_times: dict[str, list[float]] = {}
    for _ in range(args.repeats):
        for name, keys, expect in grouping:
            group_times.setdefault(name, []).append(change(keys, expect))
    for name, ts in [*timings.items(), *group_times.items()]:
        print(f"  {name:28s} median {statistics.median(ts) * 1000:7.1f} ms  "
              f"max {max(ts) * 1000:7.1f} ms")
    print(f"filter/sort change, median over all: {statistics.median(all_times) * 1000:.1f} ms")
    toggles = [t for ts in group_times.values() for t in ts]
    print(f"grouping toggle, median over all: {statistics.median(toggles) * 1000:.1f} ms")
    current, peak = rss_mb(app_pid())
    print(f"resident memory: {current:.0f} MB now, {peak:.0f} MB peak")
    tmux("send-keys", "-t", SESSION, "q")
    subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

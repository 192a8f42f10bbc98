"""A worker gives back the heap a model case's part freed (issue 41, memory): glibc keeps
freed blocks below the top of its heap resident, so without ``malloc_trim`` a worker stays
as large as its largest part for the rest of the run."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

CODE = """
import numpy as np
from gero_runner.execution import pool

def rss_mb():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS")) / 1024

blocks = [np.ones(64 * 1024 // 8) for _ in range(6400)]  # 400 MB: over the trim limit
last = blocks[-1]  # the top of the heap stays in use: free() alone cannot shrink it
del blocks
before = rss_mb()
pool._give_back_memory()
print(before, rss_mb())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's heap")
def test_the_heap_a_part_freed_goes_back_to_the_system() -> None:
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                          timeout=120, check=True)
    before, after = (float(x) for x in done.stdout.split())
    assert before - after > 300, (before, after)


def test_a_small_worker_is_not_collected_after_each_part(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """The collection and the trim cost about 90 ms a part (magika's 26 parts: 2.3 s of
    CPU); a worker under the limit skips both."""
    from gero_runner.execution import pool

    collected: list[int] = []

    def collect(*_: object) -> int:
        collected.append(1)
        return 0

    monkeypatch.setattr("gc.collect", collect)
    monkeypatch.setattr(pool, "_resident_bytes", lambda: pool.TRIM_ABOVE_BYTES - 1)
    pool._give_back_memory()
    assert collected == []
    monkeypatch.setattr(pool, "_resident_bytes", lambda: pool.TRIM_ABOVE_BYTES)
    pool._give_back_memory()
    assert collected == [1]

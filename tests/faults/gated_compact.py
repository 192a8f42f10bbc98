"""``gero`` as a real process whose compaction stops, holding the data root's lock, just
before it swaps the store's index, until a gate file exists.

It marks the moment by creating GERO_TEST_HOLDING; GERO_TEST_GATE lets it go on.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from gero_cli import main
from gero_runner.storage import compact, index

_write_index = index.write_index


def _gated(*args: Any) -> None:
    Path(os.environ["GERO_TEST_HOLDING"]).touch()
    while not os.path.exists(os.environ["GERO_TEST_GATE"]):
        time.sleep(0.02)
    _write_index(*args)


setattr(compact, "write_index", _gated)  # noqa: B010 (the name compaction calls)

if __name__ == "__main__":
    sys.exit(main())

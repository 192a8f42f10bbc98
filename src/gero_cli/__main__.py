"""``python -m gero_cli``: the same as the ``gero`` command."""

from __future__ import annotations

import sys

from gero_cli import console

if __name__ == "__main__":
    sys.exit(console())

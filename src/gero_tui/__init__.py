"""gero's explorer, query layer and command line.

Importing this package is cheap: the Textual app, DuckDB and ONNX Runtime are imported by
the modules that need them.
"""

from __future__ import annotations

__version__ = "0.1.0"

"""gero's batch runner: seeded ONNX cases through independent paths, classified, kept.

Importing this package is cheap: ONNX Runtime and onnx are imported only by the modules
that execute graphs.
"""

from __future__ import annotations

__version__ = "0.1.0"

"""gero's Textual explorer: the app, its screens and widgets over the headless query layer
(``gero.query``). The command line that opens it is ``gero_cli``.

Importing this package is cheap: the Textual app and DuckDB are imported by the modules that
need them.
"""

from __future__ import annotations

__version__ = "0.1.0"

"""The run's tolerances by dtype (``--rtol float16=1e-2``): the items go to the library as
typed, which reads and checks them once (``gero_runner.tolerances``)."""

from __future__ import annotations

from gero_cli.args.base import ArgGroup, arg

TOLERANCES = ArgGroup((
    arg("rtol", action="append", default=[], metavar="DTYPE=V",
        help="relative tolerance for a dtype, e.g. float16=1e-2 (repeatable; "
        "defaults: float16 5e-3, float32 1e-5, float64 1e-12)"),
    arg("atol", action="append", default=[], metavar="DTYPE=V",
        help="absolute tolerance for a dtype, e.g. float16=1e-3 (repeatable; "
        "defaults: float16 5e-4, float32 1e-6, float64 1e-13)"),
))

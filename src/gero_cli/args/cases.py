"""Which cases run: the suite and the user's models, the operators, dtypes and runtimes
they run on, and whether the contracts and variants are checked."""

from __future__ import annotations

from gero_cli.args.base import ArgGroup, arg, names
from gero_runner.request import suite_names
from gero_runner.tolerances import FLOAT_DTYPES

CASES = ArgGroup((
    arg("suite", default="synthetic", choices=suite_names(),
        help="which cases: synthetic (gero's operator suite, the default), "
        "onnx-backend (onnx's node tests), models (onnx's light models), all"),
    arg("models", action="append", default=[], metavar="PATH",
        help="an ONNX model to test (repeatable)"),
))

SELECTION = ArgGroup((
    arg("ops", names, default="", help="comma-separated operators or entry names"),
    arg("dtypes", names, default="", help=f"comma-separated, from {','.join(FLOAT_DTYPES)}"),
    arg("backends", lambda value: names(value) or None, default="", metavar="A,B",
        help="runtimes under test, from onnxruntime,openvino,tract (default: the "
             "installed ones); the onnx ReferenceEvaluator always runs"),
))

CHECKS = ArgGroup((
    arg("contracts", action="store_false", default=True, help="skip contracts and variants"),
))

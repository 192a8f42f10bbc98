"""How a ``--model`` is judged: its task, the variants built and gated, their calibration,
and what its outputs are. A new model option is its line here, its ``ModelOptions`` field
and ``RunKeywords`` key (``gero_runner.request``), and the code that uses it."""

from __future__ import annotations

from gero_cli.args.base import ArgGroup, arg, names

MODEL = ArgGroup((
    arg("task", default=None, help="model task, e.g. classifier (decision metric)"),
    arg("variants", names, default="", help="model variants: int8-dynamic,int8-static,fp16"),
    arg("calibration_file", default=None, metavar="FILE.npz",
        help="calibration arrays for the int8-static variant, by input name: each "
             "the input's shape (one sample) or with a leading sample axis "
             "(default: the --inputs arrays; without either the variant is "
             "calibrated on seeded noise and its verdict says so)"),
    arg("decision_axes", action="append", default=[], metavar="NAME=AXIS",
        help="class axis of a --model output for its cosine and decisions, e.g. "
             "output0=1 for a detector's [N, C, anchors] (default: the last axis; "
             "repeatable)"),
    arg("output_kinds", action="append", default=[], metavar="NAME=KIND",
        help="kind of a model output: dense|confidence|rotation|translation|keypoints"),
))

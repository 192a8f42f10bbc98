"""How a ``--model``'s inputs are fed: dynamic dimensions, whole shapes, ranges, constants
or real arrays (each item's syntax is checked against the model by ``models.inputs``)."""

from __future__ import annotations

from gero_cli.args.base import ArgGroup, arg

INPUTS = ArgGroup((
    arg("dims", action="append", default=[], metavar="NAME=VALUE",
        help="value of a dynamic dimension of --model inputs, by dim_param or "
        "INPUT[AXIS] (repeatable)"),
    arg("input_shapes", action="append", default=[], metavar="NAME=SHAPE",
        help="whole shape of a --model input, e.g. x=1,3,48,192; 'sr=' feeds a "
        "scalar (repeatable)"),
    arg("input_ranges", action="append", default=[], metavar="NAME=LO,HI",
        help="draw a --model input uniformly in [LO, HI] (repeatable)"),
    arg("input_values", action="append", default=[], metavar="NAME=V",
        help="fill a --model input with the constant V (repeatable)"),
    arg("inputs_file", default=None, metavar="FILE.npz",
        help="real arrays for --model inputs, by input name"),
))

"""Localize: from an observation whose two paths disagree, the node where the error enters.

The two sides of an observation (a runtime setting, the ReferenceEvaluator, the float64
shadow; the model or its int8/float16 variant) are run again on the observation's inputs
with intermediate tensors as outputs, and compared tensor by tensor in topological order,
matched by name (a variant keeps its model's tensor names; the tensors it adds, such as
QuantizeLinear outputs and Casts, are not compared, nor a name the two graphs make with
different operators). A runtime that fuses nodes keeps only
some tensors (ONNX Runtime's optimised graph, OpenVINO's executed graph): only the tensors
that survive on both sides are compared, since marking a fused-away tensor as an output
would undo the fusion being localized.

Each tensor's figures are its scaled error ``max|a−r| / max|r|`` and its floor (see
docs/explanation/observations.md, localize): the
reference side's own sensitivity at that tensor (a run with 1e-7 relative noise on the float
inputs), against which a tensor diverges when its error is over ``FLOOR_FACTOR`` × the
floor and over ``ROUNDINGS`` roundings of the path's own dtype.

Where the error enters, not where it shows: each diverging tensor's node (the nodes a
runtime fused into it, where its middle did not survive) runs alone on both sides from the
reference side's values of its inputs. A node whose own output then differs is an origin;
one that only carries or magnifies the error it received is an amplifier. A region run alone
keeps the whole model's symbolic dimensions (a runtime may compute a fixed-shape region
otherwise). An origin's share of the final error is measured by feeding its alone-output
into the reference side and running to the output, each origin alone: shares overlap, and
where they add past 100 % the summary says so. An origin whose inputs are already further
off than its own difference is not where the error enters (the summary says it entered
before the tensors compared). A quantiser that moves values to another integer step from
inputs within the roundings, its own run agreeing, is the origin where no node differs on
its own (its cause the step, and the path's precision rewrite where it has one).

Bounded: at most ``TRACE_BYTES`` of intermediates per side at once. A model whose compared
tensors are larger is traced at checkpoints spread over the graph first; the stretch between
the last agreeing and the first diverging checkpoint is traced next (a prefix of the graph,
so a stretch near the input costs little), until a stretch fits. Where that stretch's
origins explain under half the final error, the stretch where the traced error rises most
past it is traced and judged too.

The result is stored beside the evidence (``localize/OBSERVATION_ID.json``), with the
tensors of its origins and amplifiers (``localize/OBSERVATION_ID.npz``) for the explorer.

The package, by responsibility, each module importing only those before it in this list:
``bounds`` (the kinds of side and the bounds), ``figures`` (the scaled error, roundings),
``producers`` (whether two graphs' tensors of one name are one quantity: a builder that
folds a Clip into the Add before it gives the Add the Clip's name), ``sides`` (what each
side computes), ``search`` (tracing to where the sides part and running regions alone),
``retrace`` (a coarser trace where marking tensors changes the path's output), ``judge``
(origin, amplifier or builds-up; what the origins explain; the summary), ``store`` (the
stored result, the ``-o`` repro) and ``observation`` (one observation in a child process,
stored).
"""

from __future__ import annotations

from gero_runner.evidence.localize.bounds import DEFAULT_TIMEOUT_S
from gero_runner.evidence.localize.figures import figure
from gero_runner.evidence.localize.observation import (
    SCRATCH_PREFIX,
    LocalizeFailed,
    localize_case,
    localize_observation,
)
from gero_runner.evidence.localize.sides import load_graph, run_side, sides
from gero_runner.evidence.localize.store import (
    localize_path,
    read_kept_tensors,
    read_localization,
    store_localization,
)
from gero_runner.evidence.localize.words import summary

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "SCRATCH_PREFIX",
    "LocalizeFailed",
    "figure",
    "load_graph",
    "localize_case",
    "localize_observation",
    "localize_path",
    "read_kept_tensors",
    "read_localization",
    "run_side",
    "sides",
    "store_localization",
    "summary",
]

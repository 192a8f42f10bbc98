"""What a case is: a graph, seeded inputs, an expected result and the laws that apply.

Two shapes of the same idea:

- ``OpCase`` is a declarative synthetic entry (graph builder, input generator, float64
  formula, contracts), registered by unique name; it expands into one ``CaseInstance`` per
  dtype and shape.
- ``CaseInstance`` is one concrete, picklable case that the execution layer runs: model
  bytes, input arrays and, where known, expected outputs. Every suite (synthetic, onnx
  backend, shipped models, user models) produces these.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Arrays = dict[str, np.ndarray]
Shape = tuple[int, ...]

OPSET = 19
IR_VERSION = 10

# How an operator treats the leading (batch) axis; decides which batch contracts apply.
BATCH_INDEPENDENT = "independent"  # examples are independent: partition, permutation, ...
BATCH_REDUCE = "reduce"  # reduces across the batch: partial sums, permutation invariance
BATCH_NONE = "none"  # no batch semantics (e.g. a Gather of rows by index)


MODEL_SUITES = ("models", "model")
"""Suites whose cases are whole models (shipped, the user's): their outputs are compared on
the model's scale (``metrics.model_level.MODEL_REL_FLOOR``) and the model family runs."""


@dataclass(frozen=True)
class GraphSpec:
    """A single-node graph: operator, attributes, constant inputs and output dtypes."""

    op_type: str
    inputs: tuple[str, ...]
    """Names of graph inputs, in node order (runtime-fed tensors)."""
    outputs: tuple[str, ...] = ("Y",)
    attrs: Mapping[str, Any] = field(default_factory=dict)
    constants: Mapping[str, np.ndarray] = field(default_factory=dict)
    """Initializers (e.g. axes, shapes), placed in node input order by ``node_inputs``."""
    node_inputs: tuple[str, ...] | None = None
    """Full node input order when constants are interleaved with graph inputs ('' = absent)."""
    output_dtypes: tuple[str | None, ...] | None = None
    """Output element types; None means 'same as the first input'."""
    domain: str = ""


@dataclass(frozen=True)
class OpCase:
    """A synthetic operator case: one declarative entry, expanded over dtypes and shapes."""

    name: str
    """Unique name in the registry, e.g. 'Softmax' or 'Add.broadcast'."""
    op_type: str
    graph: Callable[[str, Arrays], GraphSpec | Any]
    """Builds the graph for a dtype from the generated inputs (a GraphSpec or a ModelProto)."""
    inputs: Callable[[np.random.Generator, str, Shape], Arrays]
    """Seeded input generator: (rng, dtype, shape) -> ordered inputs. It may also return the
    tensors the graph keeps as initializers (weights); only graph inputs become feeds."""
    formula: Callable[[Arrays], Sequence[np.ndarray]]
    """Analytic float64 result from the inputs widened to float64."""
    shapes: tuple[Shape, ...]
    dtypes: tuple[str, ...] = ("float16", "float32", "float64")
    batch: str = BATCH_INDEPENDENT
    contracts: tuple[str, ...] = ()
    """Extra laws by name (e.g. 'probability', 'masked_rows', 'layernorm_variance')."""
    variants: tuple[str, ...] = ()
    """Algebraic graph variants by name, compared against this graph."""
    tolerance: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    """Per-dtype (rtol, atol) when the operator's own contract needs another bound."""
    note: str = ""


@dataclass(frozen=True)
class ModelChecks:
    """How the model family judges a model case (``--task``, ``--variants``,
    ``--output-kind``), validated against the model's outputs."""

    task: str | None = None
    variants: tuple[str, ...] = ()
    output_kinds: Mapping[str, str] = field(default_factory=dict)
    """Output name -> dense | confidence | rotation | translation | keypoints."""
    calibration: tuple[Mapping[str, np.ndarray], ...] = ()
    """The int8-static variant's calibration feeds (empty: seeded noise, uncalibrated)."""
    calibration_source: str = ""
    """Where they came from, as a verdict names it."""
    decision_axes: Mapping[str, int] = field(default_factory=dict)
    """Output name -> its class axis (``--decision-axis``; default the last)."""


@dataclass
class CaseInstance:
    """One concrete case, ready to run in a worker process (picklable)."""

    suite: str
    case_id: str
    op_type: str
    case_name: str
    dtype: str
    seed: int
    model: bytes
    inputs: Arrays
    expected: Arrays | None = None
    """Reference outputs that do not come from a backend (float64 formula, shipped data)."""
    expected_label: str = "numpy-float64"
    expected_version: str = ""
    expected_exact: Arrays | None = None
    """Unrounded float64 results, kept for the arbiter and the evidence."""
    tolerance: tuple[float, float] | None = None
    """A tolerance of the case's own (e.g. an onnx backend case's rtol/atol)."""
    batch: str = BATCH_NONE
    contracts: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()
    spec_name: str = ""
    """Registry name of the OpCase this instance came from (for contracts and variants)."""
    unsupported: str = ""
    """Why gero cannot feed or compare this case (it becomes one execution row)."""
    wrapped: str = ""
    """What the sequence/optional wrapper changed in an onnx backend case's graph."""
    random: bool = False
    """The graph draws random values (Bernoulli, Random*): its outputs may differ between
    runs even seeded (a runtime may ignore the seed), so they are not part of its
    observations' identity: a rerun finds the same observation, not a new one."""
    reference_repeats: int | None = None
    """Timed ReferenceEvaluator runs when fewer than the run's (seconds each on a CNN)."""
    model_checks: ModelChecks | None = None
    """Set on model cases: the model family's checks run with these settings."""
    shadow_error: str = ""
    """Why the float64 shadow of a user model could not run (a model case without arbiter)."""
    probability_axis: int | None = None
    """Row axis of the probability law for a graph without Softmax (None: element-wise)."""
    layernorm_epsilon: float = 1e-5
    """The ε a decomposed LayerNorm promises (a graph without LayerNormalization)."""
    layernorm_axis: int = -1
    input_choices: tuple[Mapping[str, Any], ...] = ()
    """Per input of a user model: the shape fed, where each size and the values came from."""
    inputs_text: str = ""
    """``input_choices`` in one line; every row of the case shows it in its details."""
    non_tensor_outputs: Mapping[str, str] = field(default_factory=dict)
    """Model outputs that are not tensors (name -> ONNX type): one execution row each."""
    warnings: tuple[str, ...] = ()
    """Signs that the inputs, not the model, decide the verdict (printed before the run)."""
    malformed: tuple[tuple[str, str], ...] = ()
    """(cause key, sentence) of each node whose attribute sizes break its operator's spec
    (``models.structure``): a finding about the model, and the cause of a path's failure."""


def stable_seed(base_seed: int, case_id: str) -> int:
    """A per-case seed that depends only on the run seed and the case id (not on order)."""
    digest = hashlib.sha256(f"{base_seed}:{case_id}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def shape_label(shape: Shape) -> str:
    return "x".join(str(d) for d in shape) if shape else "scalar"

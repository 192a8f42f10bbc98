"""What `gero localize` finds, as data: the compared sides, each tensor's figures, the
origins and amplifiers, and the whole localization (stored as JSON beside the evidence).
Its own module so that the repro writer and the localizer both read it without importing
each other."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Side:
    """One path of the comparison, enough to run it again."""

    label: str
    """As the observation names it: 'onnxruntime:all', 'float64-shadow', 'fp32:openvino:f32'."""
    kind: str
    backend: str
    settings: dict[str, Any]
    graph: str
    """The graph it runs, relative to the artifact directory."""
    stored: str = ""
    """Its stored output for the observation's output (to check a traced run against)."""


@dataclass(frozen=True)
class TensorFigure:
    """One compared tensor: both sides' end-to-end difference and its floor."""

    name: str
    position: int
    """Index in the compared tensors' topological order."""
    node: str
    op_type: str
    scaled_error: float
    floor: float
    threshold: float
    diverges: bool
    nonfinite: int = 0
    """Elements where one side is NaN/inf and the other is not (or another kind)."""
    dtype: str = ""
    shape: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class NodeFinding:
    """A diverging node run alone on the reference side's inputs."""

    node: str
    op_type: str
    tensor: str
    nodes: list[str]
    """The original nodes it stands for: one, or those a runtime fused into it."""
    inputs: dict[str, float]
    """Each float input's end-to-end scaled error (how far the two sides' inputs were)."""
    inputs_scaled_error: float
    output_scaled_error: float
    """End to end: where the error shows."""
    local_scaled_error: float
    """Alone, from the reference side's inputs on both paths: what the node itself adds."""
    threshold: float
    gain: float
    """Output over inputs' end-to-end scaled error."""
    share: float | None = None
    """The final error the node's own error explains (its alone-output fed into the
    reference side, run to the output), as a fraction of the observed final error."""
    fused_as: str = ""
    """The fused node on the side that fused it (e.g. "LayerNormalization '/LayerNormFusion/'")."""
    within: str = ""
    """For a region of several nodes whose inner tensors could be traced without changing
    its output: the inner node where the difference first appears ("OpType 'name'")."""
    role: str = ""
    """For a node that is no origin: 'amplifier' when its own run (the reference side's
    node fed each side's inputs) makes the difference it receives larger, 'carrier' when
    it passes it on no larger (or it received non-finite values)."""
    propagated: float | None = None
    """The difference its own run makes of the difference it receives: the reference
    side's region fed the path's own inputs, against it fed the reference's (None: not
    measured)."""
    widened: list[str] = field(default_factory=list)
    """Tensors between nodes that read back the same on both sides but that the path does
    not compute with: the region was run across them as one unit."""
    cause: str = ""
    """What the path's own graph does to this region, read from its optimised graph (a
    precision rewrite: float16 nodes computed in float32)."""


@dataclass(frozen=True)
class Localization:
    observation_id: str
    case_id: str
    check: str
    output_name: str
    actual: str
    reference: str
    actual_graph: str
    reference_graph: str
    final_scaled_error: float
    final_threshold: float
    compared: int
    """Tensors both sides have (after fusions) and that were compared."""
    traced: int
    passes: list[dict[str, Any]]
    tensors: list[TensorFigure]
    origins: list[NodeFinding]
    amplifiers: list[NodeFinding]
    instrumented: dict[str, Any]
    summary: str
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    repro: str = ""
    unaccounted: list[str] = field(default_factory=list)
    """Diverging tensors whose difference neither their own run nor what they receive
    accounts for (not localized)."""
    within_gate: bool = False
    """The row passed its own gate: its difference is one the check allows, so no origin
    is named."""
    renamed: list[str] = field(default_factory=list)
    """Tensors of one name the two graphs make with different operators (a builder folded
    a node away, its tensor name kept): not compared (the notes say what was folded)."""
    explained: float | None = None
    """The final error the origins named explain together (their alone-outputs fed into
    the reference side at once, run to the output), as a fraction of it; None: not
    measured."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

"""The words and bounds localize's modules share: the kinds of side, how much is traced and
run alone at once, and the operators localized as a unit. The result's dataclasses are
``evidence.localization`` (the repro writer reads them too)."""

from __future__ import annotations

SHADOW = "float64-shadow"
ROUNDED = "float64-shadow-rounded"
"""A shadow side whose float16 tensors are rounded to float16 at each node (the fp16 file
computed as a correct float16 engine would)."""
RUNTIME, REFERENCE, SHADOW_KIND = "runtime", "reference", "shadow"
DEQUANTIZED = "dequantized"
"""A shadow side's setting: compute quantised operators dequantized (DynamicQuantizeLinear as
the identity), as the whole model's shadow did, in any region cut from it."""
TRACE_BYTES = 192 << 20
"""Intermediates held per side at once."""
FLOOR_FACTOR = 10.0
ROUNDINGS = 8
NOISE_RELATIVE = 1e-7
ACCOUNTED = 0.5
"""A node that makes no difference of its own accounts for its output's difference when
the difference it receives, through its own run, is at least this part of it."""
MAX_CANDIDATES = 8
"""Diverging nodes run alone, first in topological order (each costs a session per side)."""
MAX_SHARES = 3
"""Origins whose share of the final error is measured (one run of the reference each)."""
KEEP_TENSOR_BYTES = 4 << 20
"""Tensors of origins and amplifiers kept for the explorer, up to this size each."""
DEFAULT_TIMEOUT_S = 1800.0

SUBGRAPH_OPS = ("If", "Loop", "Scan")
"""Operators whose work is done in subgraphs, which localize runs as one node."""
BODY = {"If": "branch", "Loop": "body", "Scan": "body"}
"""What each of ``SUBGRAPH_OPS`` calls its subgraph, in sentences."""

"""What decides a row, for the views that print its figures: most rows pass or fail by
their element-wise tolerance (rtol, atol; the ULP distance beside it), but the model
family's variant, decision and noise-floor rows are gated by row cosine and argmax
agreement (``checks.model``), where those figures are only context. A light module: the
query layer and the explorer read it without the model family's imports."""

from __future__ import annotations

_NOT_ELEMENTWISE = {
    "vs-model": "row cosine and argmax agreement against the fp32 model",
    "cosine": "row cosine against the run's baseline on the variant file",
    "decision": "argmax agreement against the run's baseline on the variant file",
    "noise-floor": "none: it measures the runtime's own sensitivity (row cosine, scaled "
                   "error)",
}


def non_elementwise_gate(check: str) -> str:
    """The gate in words where rtol, atol and ULP figures do not decide a row of ``check``;
    '' where they do."""
    parts = str(check).split(":")
    if parts[0] != "model":
        return ""
    return _NOT_ELEMENTWISE.get(parts[-1], "")

"""Export a PyTorch module to ONNX: TorchScript exporter, weights embedded, dynamic batch.

The TorchScript-based exporter (``dynamo=False``) is used on purpose: it is the exporter the
seed's parity scripts describe, needs no onnxscript, and is deterministic for a fixed
module. Every input and output gets a symbolic leading dimension ``batch``.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator
from typing import Any

from gero_runner.errors import GeroError
from gero_runner.parity.torch_support import require_torch

OPSETS = (17, 18, 19)
DEFAULT_OPSET = 17
BATCH_DIM = "batch"


class ExportError(GeroError):
    """torch.onnx.export failed; the message is the exporter's first lines, not its IR dump."""


def export_onnx(module: Any, args: tuple[Any, ...], input_names: list[str],
                output_names: list[str], output_ranks: list[int],
                opset: int = DEFAULT_OPSET) -> bytes:
    """The ONNX model of ``module`` traced on ``args`` (bytes, weights inside); outputs of
    rank 0 keep a static shape."""
    if opset not in OPSETS:
        raise GeroError(f"opset {opset} is not supported for export; choose from "
                        f"{', '.join(str(o) for o in OPSETS)}")
    torch = require_torch()
    dynamic = {name: {0: BATCH_DIM} for name, x in zip(input_names, args, strict=True)
               if getattr(x, "dim", lambda: 0)() >= 1}
    buffer = io.BytesIO()
    try:
        with warnings.catch_warnings(), _quiet_stdout():
            # The legacy exporter announces its deprecation on every call.
            warnings.simplefilter("ignore")
            torch.onnx.export(
                module, args, buffer, dynamo=False, opset_version=opset,
                input_names=input_names, output_names=output_names,
                dynamic_axes={**dynamic, **{n: {0: BATCH_DIM} for n, rank in
                                            zip(output_names, output_ranks, strict=True)
                                            if rank >= 1}},
                export_params=True, do_constant_folding=True,
            )
    except Exception as e:  # the exporter raises many types; each is an observation
        raise ExportError(f"torch.onnx.export (opset {opset}) failed: {short_error(e)}") from e
    return buffer.getvalue()


def short_error(e: BaseException) -> str:
    """The exception's message without the Torch IR graph the exporter appends."""
    text = str(e).split("Torch IR graph at exception")[0].strip()
    lines = [line for line in text.splitlines() if line.strip()]
    text = " ".join(lines[:3]) if lines else ""
    text = f"{type(e).__name__}: {text}" if text else type(e).__name__
    return text if len(text) <= 600 else text[:600] + " …"


@contextlib.contextmanager
def _quiet_stdout() -> Iterator[None]:
    """Silence file descriptor 1: on failure the exporter's C++ side prints its whole IR graph
    there (``_jit_onnx_log``), which would bury the one-line observation."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # pytest capture, no real descriptor
        yield
        return
    sys.stdout.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), fd)
        try:
            yield
        finally:
            sys.stdout.flush()
            os.dup2(saved, fd)
            os.close(saved)

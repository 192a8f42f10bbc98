"""The one door to PyTorch: a clear message when the optional extra is not installed."""

from __future__ import annotations

from types import ModuleType

from gero_runner.errors import GeroError

INSTALL_HINT = "pip install 'gero[torch]'  (the pinned CPU build, torch==2.13.0)"


class TorchMissingError(GeroError):
    """PyTorch is not installed: parity needs the ``torch`` extra."""


def require_torch() -> ModuleType:
    """``import torch``, or a GeroError that says how to install it."""
    try:
        import torch
    except ImportError as e:
        raise TorchMissingError(
            f"gero parity needs PyTorch, which is not installed here ({e}); install the "
            f"extra: {INSTALL_HINT}"
        ) from e
    module: ModuleType = torch  # Any to mypy: pyproject skips torch's sources (slow)
    return module


def torch_version() -> str:
    torch = require_torch()
    return str(torch.__version__)

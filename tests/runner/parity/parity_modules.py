"""Small PyTorch modules for the parity tests (imported by ``gero parity --module``).

The tests copy this file into a temporary directory and run gero from there, so it is
imported the way a user's module is: from the current directory.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn


def make_mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def make_wide_mlp() -> nn.Module:
    """Same input as make_mlp, five outputs: its ONNX export has another output shape."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 5))


def make_convnet() -> nn.Module:
    torch.manual_seed(1)
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 2, 3), nn.Flatten(), nn.Linear(2 * 6 * 6, 3))


class PoseHead(nn.Module):
    """Rotation about z by (angle + offset) and a translation along a fixed direction."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("offset", torch.tensor(0.25))
        self.register_buffer("direction", torch.tensor([1.0, -2.0, 0.5]))

    def forward(self, angle: torch.Tensor) -> dict[str, torch.Tensor]:
        theta = angle + self.offset
        c, s = torch.cos(theta), torch.sin(theta)
        zero, one = torch.zeros_like(c), torch.ones_like(c)
        rotation = torch.stack([torch.stack([c, -s, zero], -1), torch.stack([s, c, zero], -1),
                                torch.stack([zero, zero, one], -1)], -2)
        return {"rotation": rotation, "translation": angle[:, None] * self.direction}


def make_pose() -> nn.Module:
    return PoseHead()


class KeypointHead(nn.Module):
    """Keypoints (x0, y0, x1, y1) = scale · features + shift, and a confidence per point."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("scale", torch.tensor(20.0))
        self.register_buffer("shift", torch.zeros(12, 4))

    def forward(self, feats: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        points = feats[..., :4] * self.scale + self.shift
        return points, torch.sigmoid(feats[..., 4])


def make_keypoints() -> nn.Module:
    return KeypointHead()


class _SigmoidWithHardLowering(torch.autograd.Function):
    """Exact sigmoid in PyTorch, exported as ONNX HardSigmoid: a lowering that differs."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x)

    @staticmethod
    def symbolic(g: Any, x: torch.Value) -> torch.Value:
        return g.op("HardSigmoid", x, alpha_f=0.2, beta_f=0.5)


class GateNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(2)
        self.fc = nn.Linear(8, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _SigmoidWithHardLowering.apply(self.fc(x))


def make_gate() -> nn.Module:
    return GateNet()


class Unexportable(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.linalg.eigvalsh(x @ x.transpose(-1, -2))


def make_unexportable() -> nn.Module:
    return Unexportable()


class LogNet(nn.Module):
    """log of a standard normal input: NaN on both sides for the negative entries."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(x) * math.pi


def make_lognet() -> nn.Module:
    return LogNet()


def not_a_module() -> str:
    return "nope"


class Crashing(nn.Module):
    """Dies with SIGSEGV in its forward, as a broken kernel would."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import ctypes

        ctypes.string_at(0)  # reads address 0
        return x


def make_crashing() -> nn.Module:
    return Crashing()


def make_hanging_factory() -> nn.Module:
    """Never returns: building the module is bounded like running it."""
    while True:
        pass

"""Builds a MobileNetV3-small (Howard et al. 2019, table 2) at 224×224 with random weights
and exports it to ONNX, for timing the float64 shadow where no MobileNetV3 ships in a
wheel. The architecture is written here (no torchvision); the weights do not matter for
speed.

    python bench/make_mobilenetv3.py [--out /work/models/mobilenetv3_synth]

Writes OUT/model.onnx and OUT/inputs.npz (one 2×3×224×224 float32 batch, seed 0).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

# kernel, expansion, out channels, squeeze-excite, activation, stride
SMALL = [(3, 16, 16, True, "RE", 2), (3, 72, 24, False, "RE", 2),
         (3, 88, 24, False, "RE", 1), (5, 96, 40, True, "HS", 2),
         (5, 240, 40, True, "HS", 1), (5, 240, 40, True, "HS", 1),
         (5, 120, 48, True, "HS", 1), (5, 144, 48, True, "HS", 1),
         (5, 288, 96, True, "HS", 2), (5, 576, 96, True, "HS", 1),
         (5, 576, 96, True, "HS", 1)]


def _divisible(v: float, d: int = 8) -> int:
    n = max(d, int(v + d / 2) // d * d)
    return n + d if n < 0.9 * v else n


def build() -> object:
    import torch
    from torch import nn

    def act(kind: str) -> nn.Module:
        return nn.Hardswish() if kind == "HS" else nn.ReLU()

    def conv_bn(cin: int, cout: int, k: int, s: int, groups: int, kind: str | None
                ) -> nn.Sequential:
        layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups,
                                             bias=False), nn.BatchNorm2d(cout)]
        if kind:
            layers.append(act(kind))
        return nn.Sequential(*layers)

    class SqueezeExcite(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            mid = _divisible(c / 4)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc1, self.fc2 = nn.Conv2d(c, mid, 1), nn.Conv2d(mid, c, 1)
            self.relu, self.gate = nn.ReLU(), nn.Hardsigmoid()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * self.gate(self.fc2(self.relu(self.fc1(self.pool(x)))))

    class Block(nn.Module):
        def __init__(self, cin: int, k: int, exp: int, cout: int, se: bool, kind: str,
                     s: int) -> None:
            super().__init__()
            layers: list[nn.Module] = []
            if exp != cin:
                layers.append(conv_bn(cin, exp, 1, 1, 1, kind))
            layers.append(conv_bn(exp, exp, k, s, exp, kind))
            if se:
                layers.append(SqueezeExcite(exp))
            layers.append(conv_bn(exp, cout, 1, 1, 1, None))
            self.body = nn.Sequential(*layers)
            self.residual = s == 1 and cin == cout

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.body(x)
            return x + y if self.residual else y

    blocks: list[nn.Module] = [conv_bn(3, 16, 3, 2, 1, "HS")]
    cin = 16
    for k, exp, cout, se, kind, s in SMALL:
        blocks.append(Block(cin, k, exp, cout, se, kind, s))
        cin = cout
    blocks += [conv_bn(cin, 576, 1, 1, 1, "HS"), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
               nn.Linear(576, 1024), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(1024, 1000)]
    torch.manual_seed(0)
    model = nn.Sequential(*blocks).eval()
    with torch.no_grad():  # non-trivial running statistics, as a trained model has
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    return model


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/work/models/mobilenetv3_synth")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model = build()
    x = np.random.default_rng(0).standard_normal((2, 3, 224, 224)).astype(np.float32)
    torch.onnx.export(model, (torch.from_numpy(x),), str(out / "model.onnx"),
                      input_names=["x"], output_names=["logits"], opset_version=17,
                      dynamo=False)
    np.savez(out / "inputs.npz", x=x)
    print(out / "model.onnx")


if __name__ == "__main__":
    main()

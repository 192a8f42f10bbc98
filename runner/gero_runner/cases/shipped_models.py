"""The small real-architecture models shipped inside the onnx package
(``onnx/backend/test/data/light``) with their shipped expected outputs.

Each model's input is what onnx's own backend runner feeds it (``arange(n) / n`` in the
input's shape, float32), because that is the input the shipped outputs were computed
for; graph inputs that are also initializers (old IR 3 models list every weight as an
input) are not fed. The tolerance is the one onnx states for the model
(``data/real/test_NAME/data.json``: rtol 1e-3, 2e-3 for DenseNet-121, atol 1e-7).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from gero_runner.case import CaseInstance
from gero_runner.cases.user_models import model_checks
from gero_runner.errors import GeroError
from gero_runner.models.signature import graph_inputs
from gero_runner.request import RunRequest

SUITE = "models"
EXPECTED_LABEL = "onnx-shipped"
DEFAULT_TOLERANCE = (1e-3, 1e-7)


def data_dir() -> Path:
    return Path(onnx.__file__).parent / "backend" / "test" / "data"


def model_names() -> list[str]:
    light = data_dir() / "light"
    return sorted(p.stem.removeprefix("light_") for p in light.glob("light_*.onnx"))


def _tolerance(name: str) -> tuple[float, float]:
    meta = data_dir() / "real" / f"test_{name}" / "data.json"
    try:
        data = json.loads(meta.read_text())
    except (OSError, ValueError):
        return DEFAULT_TOLERANCE
    return float(data.get("rtol", DEFAULT_TOLERANCE[0])), float(data.get("atol",
                                                                         DEFAULT_TOLERANCE[1]))


def dummy_input(vi: onnx.ValueInfoProto) -> np.ndarray:
    """onnx's generate_dummy_data(random=False): arange(n)/n in the input's shape."""
    dims = vi.type.tensor_type.shape.dim
    shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in dims)
    n = int(np.prod(shape))
    return (np.arange(n).reshape(shape) / n).astype(np.float32)


def case_for(name: str, request: RunRequest) -> CaseInstance:
    light = data_dir() / "light"
    model = onnx.load(str(light / f"light_{name}.onnx"))
    inputs = {vi.name: dummy_input(vi) for vi in graph_inputs(model)}
    expected: dict[str, np.ndarray] = {}
    for i, out in enumerate(model.graph.output):
        path = light / f"light_{name}_output_{i}.pb"
        if not path.is_file():
            raise GeroError(f"shipped model {name}: missing expected output {path}")
        expected[out.name] = numpy_helper.to_array(onnx.load_tensor(str(path)))
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    return CaseInstance(
        suite=SUITE, case_id=f"{SUITE}/{name}", op_type=name,
        case_name=f"{name} (opset {opset}, IR {model.ir_version})", dtype="float32", seed=-1,
        model=model.SerializeToString(), inputs=inputs, expected=expected,
        expected_label=EXPECTED_LABEL, expected_version=onnx.__version__,
        # The shipped outputs are the independent side that arbitrates ORT vs reference.
        expected_exact={k: v.astype(np.float64) for k, v in expected.items()},
        tolerance=_tolerance(name),
        model_checks=model_checks(request, [o.name for o in model.graph.output],
                                  f"shipped model {name}"),
        reference_repeats=1,
    )


def cases_for_request(request: RunRequest) -> list[CaseInstance]:
    """Every shipped light model; ``--ops`` selects models by name (e.g. squeezenet)."""
    names = model_names()
    wanted = [o.lower() for o in request.ops]
    unknown = [w for w in wanted if w not in names]
    if wanted and request.suite == SUITE and unknown:
        raise GeroError(f"unknown shipped model(s) {', '.join(unknown)}; choose from "
                        f"{', '.join(names)}")
    return [case_for(n, request) for n in names if not wanted or n in wanted]

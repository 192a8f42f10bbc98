"""Models the user brings (``--model PATH``): inputs from the input signature and the user's
input options, a float64 shadow execution as the arbiter, batch contracts on a dynamic
leading dimension.

The shadow (every float tensor widened to float64, run on the ReferenceEvaluator) is
computed while the cases are collected, because the comparison of every path needs it as
the case's expected outputs; it runs in a child process bounded by the path budget (a
model may loop for ever). A shadow that cannot run is recorded as its own execution
observation.
The same run looks for signs that the inputs, not the model, decide the verdict (an empty
intermediate tensor, an all-NaN or constant output) and warns about them.

Outputs that are not tensors (a ZipMap's sequence of maps) are taken out of the graph that
the paths run; each gets one execution row naming it and its type.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx

from gero_runner.case import (
    BATCH_INDEPENDENT,
    BATCH_NONE,
    CaseInstance,
    ModelChecks,
    stable_seed,
)
from gero_runner.errors import GeroError
from gero_runner.models import inputs as model_inputs
from gero_runner.models import shadow, signature, structure
from gero_runner.models.variants import (
    INT8_DYNAMIC,
    INT8_STATIC,
    Calibration,
    already_quantised,
    calibration_from_arrays,
    parse_variants,
)
from gero_runner.request import DECISION_TASKS, OTHER_TASKS, RunRequest
from gero_runner.storage.budget import oversized_tensor
from gero_runner.storage.path_outputs import PathOutputs, Stored, path_key

SUITE = "model"
SHADOW_LABEL = "float64-shadow"


def model_checks(request: RunRequest, output_names: list[str] | None,
                 source: str) -> ModelChecks:
    """--task, --variants and --output-kind, validated against the model's outputs."""
    from gero_runner.metrics.parity import parse_output_kinds

    opts = request.model_options
    task = opts.task
    if task is not None and task not in (*DECISION_TASKS, *OTHER_TASKS):
        raise GeroError(f"unknown --task {task!r}; choose from "
                        f"{', '.join((*DECISION_TASKS, *OTHER_TASKS))} (decisions: "
                        f"{', '.join(DECISION_TASKS)})")
    kinds = parse_output_kinds(list(opts.output_kinds))
    if output_names is not None:
        unknown = [k for k in kinds if k not in output_names]
        if unknown and request.models and len(request.models) == 1:
            raise GeroError(f"{source}: --output-kind names unknown output(s) "
                            f"{', '.join(unknown)}; outputs: {', '.join(output_names)}")
        kinds = {k: v for k, v in kinds.items() if k in output_names}
    axes = parse_decision_axes(list(opts.decision_axes))
    if output_names is not None:
        unknown = [k for k in axes if k not in output_names]
        if unknown and request.models and len(request.models) == 1:
            raise GeroError(f"{source}: --decision-axis names unknown output(s) "
                            f"{', '.join(unknown)}; outputs: {', '.join(output_names)}")
        axes = {k: v for k, v in axes.items() if k in output_names}
    return ModelChecks(task=task, variants=tuple(parse_variants(list(opts.variants))),
                       output_kinds=kinds, decision_axes=axes)


def parse_decision_axes(items: list[str]) -> dict[str, int]:
    """``output0=1`` -> {"output0": 1} (negative axes count from the end)."""
    axes: dict[str, int] = {}
    for item in items:
        name, sep, text = item.partition("=")
        try:
            axes[name.strip()] = int(text)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise GeroError(f"bad --decision-axis {item!r}: expected NAME=AXIS, the output's "
                            "name and the index of its class axis (e.g. output0=1)")
    return axes


def calibration_for(request: RunRequest, options: model_inputs.InputOptions,
                    inputs: dict[str, np.ndarray]) -> Calibration:
    """The int8-static variant's calibration: ``--calibration``, else the ``--inputs``
    arrays when they give any input (integer ids or bytes feed every activation too), else
    none (seeded noise, said in the verdict)."""
    path = request.model_options.calibration_file
    if path:
        arrays = model_inputs.load_arrays(path, "--calibration", options.max_bytes)
        return calibration_from_arrays(arrays, inputs, f"--calibration {Path(path).name}")
    given = [k for k in options.arrays if k in inputs]
    if given:
        return Calibration((dict(inputs),), f"the --inputs arrays of "
                                            f"{Path(options.arrays_file).name}")
    return Calibration()


def type_text(tp: onnx.TypeProto) -> str:
    """An ONNX type as ONNX writes it: tensor(float), seq(map(int64,tensor(float)))."""
    kind = tp.WhichOneof("value")
    if kind == "tensor_type":
        return f"tensor({onnx.helper.tensor_dtype_to_np_dtype(tp.tensor_type.elem_type)})" \
            if tp.tensor_type.elem_type else "tensor"
    if kind == "sequence_type":
        return f"seq({type_text(tp.sequence_type.elem_type)})"
    if kind == "optional_type":
        return f"optional({type_text(tp.optional_type.elem_type)})"
    if kind == "map_type":
        key = onnx.helper.tensor_dtype_to_np_dtype(tp.map_type.key_type)
        return f"map({key},{type_text(tp.map_type.value_type)})"
    return str(kind)


def _names_used(graph: onnx.GraphProto) -> set[str]:
    """Every name a graph's nodes read, subgraphs included (they may read outer names)."""
    used: set[str] = set()
    for node in graph.node:
        used.update(node.input)
        for attr in node.attribute:
            for g in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs):
                used |= _names_used(g)
    return used


def tensor_outputs_only(model: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, str]]:
    """The model without its non-tensor outputs (and the nodes only they needed), and those
    outputs' types by name."""
    dropped = {o.name: type_text(o.type) for o in model.graph.output
               if o.type.WhichOneof("value") != "tensor_type"}
    if not dropped:
        return model, {}
    pruned = onnx.ModelProto()
    pruned.CopyFrom(model)
    keep = [o for o in pruned.graph.output if o.name not in dropped]
    del pruned.graph.output[:]
    pruned.graph.output.extend(keep)
    needed = {o.name for o in keep}
    nodes: list[onnx.NodeProto] = []
    for node in reversed(list(pruned.graph.node)):  # producers come before consumers
        if needed & set(node.output):
            nodes.append(node)
            single = onnx.GraphProto(node=[node])
            needed |= _names_used(single)
    kept = list(reversed(nodes))
    copies = [onnx.NodeProto() for _ in kept]
    for c, n in zip(copies, kept, strict=True):
        c.CopyFrom(n)
    del pruned.graph.node[:]
    pruned.graph.node.extend(copies)
    return pruned, dropped


def _warnings(trace: shadow.ShadowTrace, outputs: list[str], name: str) -> list[str]:
    """Signs that the inputs decide the verdict: an empty intermediate tensor, an all-NaN
    or a constant output (first of each, named)."""
    hint = "; set the inputs with --input NAME=SHAPE, --input-range, --input-value or --inputs"
    found: list[str] = []
    values = trace.outputs
    if (e := trace.first_empty) is not None:
        found.append(f"{name}: intermediate tensor {e.tensor!r} ({e.op_type} "
                     f"{e.node or ''}) is empty, shape {list(e.shape)}{hint}")
    for out in outputs:
        x = values.get(out)
        if not isinstance(x, np.ndarray) or x.dtype.kind != "f" or x.size == 0:
            continue
        if bool(np.isnan(x).all()):
            found.append(f"{name}: output {out!r} is NaN everywhere{hint}")
        elif x.size > 1 and bool(np.all(x == x.reshape(-1)[0])):
            found.append(f"{name}: output {out!r} is constant ({float(x.reshape(-1)[0]):g} "
                         f"at all {x.size} elements){hint}")
    return found


@functools.cache
def _shadow_code() -> str:
    """The shadow's own code (``models.shadow``): a change to it computes shadows again."""
    return hashlib.sha256(Path(shadow.__file__).read_bytes()).hexdigest()


def _shadow_key(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> str:
    return path_key(model.SerializeToString(), inputs, SHADOW_LABEL, onnx.__version__,
                    "-", 0, {"shadow": _shadow_code()}, 1)


def _shadow(model: onnx.ModelProto, inputs: dict[str, np.ndarray], name: str,
            timeout_s: float, reuse: PathOutputs | None = None
            ) -> tuple[dict[str, np.ndarray] | None, dict[str, np.ndarray] | None, str,
                       list[str]]:
    """The float64 shadow's outputs (rounded to the declared types, and exact), why there
    are none, and its warnings; with ``reuse``, the outputs a run kept for the same model,
    inputs and shadow code are taken instead of running it (those of a run that saw no
    empty intermediate: its warning is not kept)."""
    from gero_runner.process.isolate import IsolatedFailure, call_isolated

    names = [o.name for o in model.graph.output]
    key = _shadow_key(model, inputs) if reuse is not None else ""
    stored = reuse.load(key)[0] if reuse is not None else None
    if stored is not None and len(stored.outputs) == len(names):
        trace = shadow.ShadowTrace(dict(zip(names, stored.outputs, strict=True)), None)
    else:
        try:
            trace = call_isolated(shadow.run_shadow_traced, model, inputs,
                                  timeout_s=timeout_s)
        except IsolatedFailure as e:  # the evaluator may lack an operator: the run goes on
            if e.timed_out:
                return (None, None, f"it ran out of its {timeout_s:g} s budget "
                        "(--path-budget)", [])
            return None, None, str(e), []
        kept = [trace.outputs.get(n) for n in names]
        if reuse is not None and trace.first_empty is None and all(
                isinstance(x, np.ndarray) and not x.dtype.hasobject for x in kept):
            reuse.store(key, Stored([np.asarray(x) for x in kept], math.nan, math.nan, 1,
                                    True))
    values = trace.outputs
    missing = [n for n in names if n not in values]
    if missing:
        return None, None, f"the shadow gave no value for output(s) {', '.join(missing)}", []
    exact, rounded = {}, {}
    for o in model.graph.output:
        value = np.asarray(values[o.name])
        elem = o.type.tensor_type.elem_type
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem)) if elem else value.dtype
        exact[o.name] = value
        rounded[o.name] = value.astype(dtype) if value.dtype.kind == "f" else value
    return rounded, exact, "", _warnings(trace, names, name)


EVALUATOR_DOMAINS = ("", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training", "experimental")
"""Operator domains the onnx ReferenceEvaluator implements."""


def evaluator_lacks(model: onnx.ModelProto) -> list[str]:
    """'domain Op' for each operator of another domain (ONNX Runtime's com.microsoft
    contrib ops) that the ReferenceEvaluator, and so the float64 shadow, cannot run."""
    local = {(f.domain, f.name) for f in model.functions}
    seen = {(n.domain, n.op_type) for n in model.graph.node
            if n.domain not in EVALUATOR_DOMAINS and (n.domain, n.op_type) not in local}
    return [f"{d} {op}" for d, op in sorted(seen)]


def _check_task(task: str | None, model: onnx.ModelProto,
                outputs: dict[str, np.ndarray] | None, source: str) -> None:
    """A decision task needs a float output with a class axis (rank ≥ 2, last axis > 1), or
    an integer label output (a scikit-learn classifier's ``label``: its decisions are
    compared exactly, element by element)."""
    if task not in DECISION_TASKS:
        return
    shapes: list[tuple[str, list[int | str]]] = []
    for o in model.graph.output:
        tt = o.type.tensor_type
        if task == "classifier" and tt.elem_type in (onnx.TensorProto.INT64,
                                                     onnx.TensorProto.INT32):
            return  # a label per example: the decision itself
        if tt.elem_type not in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16,
                                onnx.TensorProto.DOUBLE, onnx.TensorProto.BFLOAT16):
            continue
        if outputs is not None and o.name in outputs:
            shapes.append((o.name, list(outputs[o.name].shape)))
        elif tt.HasField("shape"):
            shapes.append((o.name, [d.dim_value if d.dim_value > 0 else "?"
                                    for d in tt.shape.dim]))
        else:
            return  # a rank nobody knows: the run will tell
    if any(len(s) >= 2 and s[-1] != 1 for _, s in shapes):
        return
    listed = ", ".join(f"{n} {s}" for n, s in shapes) or "none with a float type"
    raise GeroError(f"{source}: --task {task} compares decisions (the argmax over a class "
                    f"axis), but no float output has one (outputs: {listed}); use --task "
                    f"regressor or leave --task out")


def declared_shape_warnings(model: onnx.ModelProto, outputs: dict[str, np.ndarray] | None,
                            name: str) -> list[str]:
    """An output whose produced shape contradicts its declared one (another rank, or a
    fixed size that differs): tools that trust the declaration will misread it."""
    if outputs is None:
        return []
    found = []
    for o in model.graph.output:
        tt = o.type.tensor_type
        if o.name not in outputs or not tt.HasField("shape"):
            continue
        declared: list[int | str] = [d.dim_value if d.HasField("dim_value") else
                                     (d.dim_param or "?") for d in tt.shape.dim]
        got = list(outputs[o.name].shape)
        if len(declared) != len(got) or any(isinstance(d, int) and d != g
                                            for d, g in zip(declared, got, strict=True)):
            found.append(f"{name}: output {o.name!r} is declared {declared} but the model "
                         f"produces {got}: its declared shape is wrong")
    return found


def _check_axes(axes: Mapping[str, int], model: onnx.ModelProto,
                outputs: dict[str, np.ndarray] | None, source: str) -> None:
    """Each ``--decision-axis`` names an axis the output has."""
    for name, axis in axes.items():
        if outputs is not None and name in outputs:
            rank = outputs[name].ndim
        else:
            o = next(o for o in model.graph.output if o.name == name)
            if not o.type.tensor_type.HasField("shape"):
                continue
            rank = len(o.type.tensor_type.shape.dim)
        if not -rank <= axis < rank:
            raise GeroError(f"{source}: --decision-axis {name}={axis}: output {name!r} has "
                            f"rank {rank} (axes 0 to {rank - 1}, or -{rank} to -1)")


def case_for_model(path: str, request: RunRequest, options: model_inputs.InputOptions,
                   original: onnx.ModelProto | None = None) -> CaseInstance:
    if original is None:
        original = signature.load_model(path)
    source = f"--model {path}"
    model, dropped = tensor_outputs_only(original)
    specs = signature.input_specs(model, source)
    name = Path(path).stem
    # The case id names the shapes fed, and the seed of record derives from the case id:
    # a first build finds the shapes, the second draws the values with that seed.
    inputs, _ = model_inputs.build_inputs(model, specs, options, request.seed, source)
    label = signature.dims_label(specs, {k: v.shape for k, v in inputs.items()})
    if options.arrays_file and set(options.arrays) & {s.name for s in specs}:
        label += f",inputs={Path(options.arrays_file).name}"
    case_id = f"{SUITE}/{name}/{label}"
    seed = stable_seed(request.seed, case_id)
    inputs, choices = model_inputs.build_inputs(model, specs, options, seed, source)
    outputs = [o.name for o in model.graph.output]
    checks = model_checks(request, outputs, source)
    int8 = [v for v in checks.variants if v in (INT8_DYNAMIC, INT8_STATIC)]
    quantised = already_quantised(model) if int8 else ""
    if quantised:  # quantising again measures nothing a user ships
        checks = dataclasses.replace(checks, variants=tuple(v for v in checks.variants
                                                            if v not in int8))
        early_warnings = [f"{name}: no {' or '.join(int8)} variant built: the model is "
                          f"already quantised ({quantised})"]
    else:
        early_warnings = []
    if INT8_STATIC in checks.variants:
        calibration = calibration_for(request, options, inputs)
        checks = dataclasses.replace(checks, calibration=calibration.samples,
                                     calibration_source=calibration.source)
    unsupported = error = ""
    warnings: list[str] = list(early_warnings)
    if not outputs:
        unsupported = ("no tensor output to compare: "
                       + ", ".join(f"output {n!r} is {t}" for n, t in dropped.items()))
        expected = exact = None
    elif (too_big := oversized_tensor(model, inputs, int(request.max_tensor_mb * 2**20))):
        unsupported, expected, exact = too_big, None, None  # before the shadow allocates it
    elif (ops := shadow.obstacles(model)):  # gero's own tooling: no path is at fault
        expected, exact, error = None, None, shadow.obstacle_sentence(ops)
        _check_task(checks.task, model, None, source)
        _check_axes(checks.decision_axes, model, None, source)
    elif (lacking := [op for op in evaluator_lacks(model)  # the shadow computes those
                      if op != f"{shadow.MS_DOMAIN} {op.split(' ')[-1]}"
                      or op.split(" ")[-1] not in shadow.SHADOW_COMPUTES]):
        # no input would make it run: not started
        expected, exact = None, None
        error = (f"the ReferenceEvaluator has no implementation of {', '.join(lacking)}, "
                 "so no float64 arbiter exists for this model")
        _check_task(checks.task, model, None, source)
        _check_axes(checks.decision_axes, model, None, source)
    else:
        reuse = PathOutputs(request.data_root) if request.reuse else None
        expected, exact, error, found = _shadow(model, inputs, name, request.path_budget_s,
                                                reuse)
        warnings += found
        if not error and (dequantized := shadow.needs_dequantizing(model)):
            warnings.append(f"{name}: {shadow.dequantized_sentence(dequantized)}")
        if error and any(c["values"].endswith("(default)") for c in choices):
            warnings.append(f"{name}: the seeded run failed ({error[:200]}); the default "
                            "inputs may not suit the model: set them with --input "
                            "NAME=SHAPE, --input-range, --input-value or --inputs")
        warnings += declared_shape_warnings(model, exact, name)
        _check_task(checks.task, model, exact, source)
        _check_axes(checks.decision_axes, model, exact, source)
    first = next((x for x in inputs.values() if x.dtype.kind == "f"), next(iter(inputs.values())))
    try:
        data = model.SerializeToString()
    except ValueError as e:  # protobuf refuses > 2 GiB
        raise GeroError(f"{source}: too large to serialise in one piece ({e})") from e
    return CaseInstance(
        suite=SUITE, case_id=case_id, op_type=name, case_name=f"{name} {label}",
        dtype=str(first.dtype), seed=seed, model=data, inputs=inputs, expected=expected,
        expected_label=SHADOW_LABEL, expected_version=onnx.__version__,
        expected_exact=exact,
        batch=BATCH_INDEPENDENT if signature.has_dynamic_batch(specs) else BATCH_NONE,
        model_checks=checks, reference_repeats=1, shadow_error=error, unsupported=unsupported,
        input_choices=tuple(choices), inputs_text=model_inputs.describe(choices),
        non_tensor_outputs=dropped, warnings=tuple(warnings),
        malformed=tuple((v.cause_key, v.sentence) for v in structure.violations(
            original, {k: x.shape for k, x in inputs.items()})),
    )


def cases_for_request(request: RunRequest) -> list[CaseInstance]:
    options = model_inputs.parse_options(request.model_options,
                                         int(request.max_tensor_mb * 2**20))
    models = {p: signature.load_model(p) for p in request.models}
    specs = {p: signature.input_specs(tensor_outputs_only(m)[0], f"--model {p}")
             for p, m in models.items()}
    model_inputs.check_names(options, specs)
    return [case_for_model(p, request, options, models[p]) for p in request.models]

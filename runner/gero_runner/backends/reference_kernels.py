"""Vectorised kernels for the ReferenceEvaluator's slow operators (Conv, ConvTranspose,
MaxPool, AveragePool, LSTM, GRU, RNN, ConvInteger), as ``new_ops`` the way the defect
corrections are.

onnx's own implementations walk windows, channels or kernel taps in Python (minutes on a
CNN). These follow the ONNX operator specification attribute by attribute and compute with
NumPy: strided views of the padded input, one BLAS matrix product per kernel tap (or one
im2col product where the column matrix is small), element-wise multiply-adds per tap for
depthwise convolutions, and one product over the batch per time step for recurrent layers.
No ONNX Runtime kernel is involved: the arbiter stays an independent path.

Two uses (``fast_ops``):

- ``complete=False`` (the ``onnx-reference`` path): the stock evaluator, only faster. A
  recurrent node that sets an attribute onnx's own operator ignores (activations, clip,
  input_forget, sequence_lens) is left to onnx's own code, so that path still shows the
  evaluator as it is.
- ``complete=True`` (the float64 shadow): every attribute as the specification says; the
  recurrent operators' ignored attributes are a registered defect (``reference_defects``).

Float16/bfloat16 inputs are computed in float32 and rounded once into their own type.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx
from numpy.lib.stride_tricks import as_strided
from onnx.reference.op_run import OpRun

CONV_INTEGER_SINCE = 10
"""ConvInteger's first opset (a dynamically quantized CNN's convolutions)."""
IM2COL_BYTES = 64 * 2**20
"""Largest column matrix a convolution builds at once; above it, one product per tap."""


def _compute_dtype(x: np.ndarray) -> np.dtype[Any]:
    return x.dtype if x.dtype in (np.float32, np.float64) else np.dtype(np.float32)


def _ints(values: Any, n: int, default: int) -> list[int]:
    return [int(v) for v in values] if values is not None and len(values) else [default] * n


def _pad_view(x: np.ndarray, begin: Sequence[int], end: Sequence[int],
              fill: float = 0) -> np.ndarray:
    if not any(begin) and not any(end):
        return x
    return np.pad(x, [(0, 0), (0, 0), *zip(begin, end, strict=True)],
                  mode="constant", constant_values=fill)


def _tap(xp: np.ndarray, offsets: Sequence[int], strides: Sequence[int],
         out: Sequence[int]) -> np.ndarray:
    """The strided view of the padded input that kernel tap ``offsets`` sees, (N, C, *out)."""
    return xp[(slice(None), slice(None),
               *(slice(o, o + (n - 1) * s + 1, s) for o, s, n in
                 zip(offsets, strides, out, strict=True)))]


def _auto_pads(auto_pad: str, size: Sequence[int], eff_kernel: Sequence[int],
               strides: Sequence[int], pads: Sequence[int], upper_extra_head: bool
               ) -> tuple[list[int], list[int]]:
    """(begin, end) pads for ``auto_pad``: SAME_* keeps ceil(in / stride) outputs, the odd
    pad at the end (SAME_UPPER) or the beginning (SAME_LOWER)."""
    n = len(size)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        begin, end = [], []
        for d, k, s in zip(size, eff_kernel, strides, strict=True):
            total = max(0, (-(-d // s) - 1) * s + k - d)
            head = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
            begin.append(head)
            end.append(total - head)
        return begin, end
    if auto_pad == "VALID":
        return [0] * n, [0] * n
    p = _ints(pads, 2 * n, 0)
    return p[:n], p[n:]


# -- Conv ------------------------------------------------------------------------------

def conv(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, auto_pad: str | None,
         dilations: Any, group: int | None, kernel_shape: Any, pads: Any, strides: Any
         ) -> np.ndarray:
    if x.ndim < 3:
        raise ValueError(f"Conv: X must have at least 3 dimensions, got shape {x.shape}")
    n_sp = x.ndim - 2
    g = int(group or 1)
    if x.shape[1] != w.shape[1] * g or w.shape[0] % g:
        raise ValueError(f"Conv: X shape {x.shape}, W shape {w.shape} and group {g} "
                         "are inconsistent")
    kernel = [int(k) for k in (kernel_shape if kernel_shape is not None and len(kernel_shape)
                               else w.shape[2:])]
    dil = _ints(dilations, n_sp, 1)
    st = _ints(strides, n_sp, 1)
    eff = [(k - 1) * d + 1 for k, d in zip(kernel, dil, strict=True)]
    begin, end = _auto_pads(auto_pad or "NOTSET", x.shape[2:], eff, st, pads, True)
    out = [(d + pb + pe - k) // s + 1 for d, pb, pe, k, s in
           zip(x.shape[2:], begin, end, eff, st, strict=True)]
    ct = _compute_dtype(x)
    xp = _pad_view(x.astype(ct, copy=False), begin, end)
    wc = w.astype(ct, copy=False)
    n, c = x.shape[:2]
    m = w.shape[0]
    cg, mg = c // g, m // g
    p = math.prod(out)
    taps = list(itertools.product(*(range(k) for k in kernel)))
    if min(out, default=1) <= 0 or n == 0 or m == 0:
        y = np.zeros((n, m, *[max(o, 0) for o in out]), dtype=ct)
    elif cg == 1 and g > 1 and n_sp <= 3:  # depthwise: one pass over every window
        view = _windows(xp, kernel, dil, st, out)  # (N, C, *out, *kernel), no copy
        sp, kk = "xyz"[:n_sp], "ijk"[:n_sp]
        y = np.einsum(f"nc{sp}{kk},cm{kk}->ncm{sp}", view, wc.reshape(c, mg, *kernel)
                      ).reshape(n, m, *out)
    else:
        y = np.empty((n, m, p), dtype=ct)
        col_bytes = n * cg * len(taps) * p * ct.itemsize
        for gi in range(g):
            xg = xp[:, gi * cg:(gi + 1) * cg]
            wg = wc[gi * mg:(gi + 1) * mg]
            if len(taps) == 1 and all(s == 1 for s in st) and xg.shape[2:] == tuple(out):
                np.matmul(wg.reshape(mg, cg), xg.reshape(n, cg, p),
                          out=y[:, gi * mg:(gi + 1) * mg])
            elif col_bytes <= IM2COL_BYTES:
                cols = _im2col(xg, kernel, dil, st, out)  # (N, cg*K, P)
                y[:, gi * mg:(gi + 1) * mg] = np.matmul(wg.reshape(mg, -1), cols)
            else:
                acc = np.zeros((n, mg, p), dtype=ct)
                for tap in taps:
                    view = _tap(xg, [t * d for t, d in zip(tap, dil, strict=True)], st, out)
                    at: tuple[Any, ...] = (slice(None), slice(None), *tap)
                    acc += np.matmul(wg[at],
                                     np.ascontiguousarray(view).reshape(n, cg, p))
                y[:, gi * mg:(gi + 1) * mg] = acc
        y = y.reshape(n, m, *out)
    if b is not None:
        y = y + b.astype(ct, copy=False).reshape(1, -1, *([1] * n_sp))
    return y.astype(x.dtype, copy=False)


def conv_integer(x: np.ndarray, w: np.ndarray, x_zero_point: np.ndarray | None,
                 w_zero_point: np.ndarray | None, auto_pad: str | None, dilations: Any,
                 group: int | None, kernel_shape: Any, pads: Any, strides: Any) -> np.ndarray:
    """ConvInteger: the convolution of x − x_zero_point and w − w_zero_point (a scalar, or
    one per output channel) in int32, padded with zeros after the subtraction as onnx's own
    operator does. Computed in float64, where every product of two 8-bit values and every
    partial sum below 2**53 is exact: the int32 result is onnx's, whatever the order."""
    xf = x.astype(np.float64)
    if x_zero_point is not None:
        xf -= np.asarray(x_zero_point, dtype=np.float64)
    wf = w.astype(np.float64)
    if w_zero_point is not None:
        wz = np.asarray(w_zero_point, dtype=np.float64)
        wf -= wz if wz.ndim == 0 else wz.reshape(-1, *([1] * (w.ndim - 1)))
    y = conv(xf, wf, None, auto_pad, dilations, group, kernel_shape, pads, strides)
    out: np.ndarray = np.rint(y).astype(np.int32)
    return out


def _windows(xp: np.ndarray, kernel: Sequence[int], dil: Sequence[int],
             strides: Sequence[int], out: Sequence[int]) -> np.ndarray:
    """Every window of the padded input as a read-only view, (N, C, *out, *kernel)."""
    n, c = xp.shape[:2]
    sp = xp.strides[2:]
    return as_strided(
        xp, shape=(n, c, *out, *kernel),
        strides=(xp.strides[0], xp.strides[1],
                 *(s * t for s, t in zip(sp, strides, strict=True)),
                 *(s * d for s, d in zip(sp, dil, strict=True))),
        writeable=False)


def _im2col(xp: np.ndarray, kernel: Sequence[int], dil: Sequence[int],
            strides: Sequence[int], out: Sequence[int]) -> np.ndarray:
    n, c = xp.shape[:2]
    n_sp = len(kernel)
    view = _windows(xp, kernel, dil, strides, out)
    # (N, C, *kernel, *out): rows ordered as W.reshape(M, C·K)'s columns
    order = (0, 1, *range(2 + n_sp, 2 + 2 * n_sp), *range(2, 2 + n_sp))
    return np.ascontiguousarray(view.transpose(order)).reshape(
        n, c * math.prod(kernel), math.prod(out))


# -- ConvTranspose ---------------------------------------------------------------------

def conv_transpose(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, auto_pad: str | None,
                   dilations: Any, group: int | None, kernel_shape: Any, output_padding: Any,
                   output_shape: Any, pads: Any, strides: Any) -> np.ndarray:
    n_sp = x.ndim - 2
    g = int(group or 1)
    n, c = x.shape[:2]
    if c != w.shape[0] or c % g:
        raise ValueError(f"ConvTranspose: X shape {x.shape}, W shape {w.shape} and group "
                         f"{g} are inconsistent")
    mg = w.shape[1]
    cg = c // g
    kernel = [int(k) for k in (kernel_shape if kernel_shape is not None and len(kernel_shape)
                               else w.shape[2:])]
    dil = _ints(dilations, n_sp, 1)
    st = _ints(strides, n_sp, 1)
    opad = _ints(output_padding, n_sp, 0)[:n_sp]
    size = list(x.shape[2:])
    full = [s * (d - 1) + op + (k - 1) * dl + 1
            for s, d, op, k, dl in zip(st, size, opad, kernel, dil, strict=True)]
    explicit = pads is not None and len(pads) and (auto_pad or "NOTSET") == "NOTSET"
    if output_shape is not None and len(output_shape):
        out = [int(v) for v in output_shape][-n_sp:]
    elif explicit or (auto_pad or "NOTSET") in ("NOTSET", "VALID"):
        p = _ints(pads if explicit else None, 2 * n_sp, 0)
        out = [f - p[i] - p[i + n_sp] for i, f in enumerate(full)]
    else:
        out = [d * s for d, s in zip(size, st, strict=True)]
    if explicit and not (output_shape is not None and len(output_shape)):
        begin = _ints(pads, 2 * n_sp, 0)[:n_sp]
    else:  # the spec's total padding, split by auto_pad (SAME_UPPER: odd one at the end)
        begin = []
        for f, o in zip(full, out, strict=True):
            total = f - o
            begin.append(total // 2 if auto_pad == "SAME_UPPER" else total - total // 2)
    ct = _compute_dtype(x)
    xc = x.astype(ct, copy=False).reshape(n, c, -1)
    wc = w.astype(ct, copy=False)
    lo = [min(0, bb) for bb in begin]
    hi = [max(f, bb + o) for f, bb, o in zip(full, begin, out, strict=True)]
    buf = np.zeros((n, mg * g, *[h - low for h, low in zip(hi, lo, strict=True)]), dtype=ct)
    for gi in range(g):
        xg = xc[:, gi * cg:(gi + 1) * cg]
        wg = wc[gi * cg:(gi + 1) * cg]  # (cg, mg, *k)
        for tap in itertools.product(*(range(k) for k in kernel)):
            at: tuple[Any, ...] = (slice(None), slice(None), *tap)
            contrib = np.matmul(wg[at].T, xg).reshape(
                n, mg, *size)
            index = tuple(slice(t * dl - low, t * dl - low + (d - 1) * s + 1, s)
                          for t, dl, low, d, s in zip(tap, dil, lo, size, st, strict=True))
            buf[(slice(None), slice(gi * mg, (gi + 1) * mg), *index)] += contrib
    y = buf[(slice(None), slice(None),
             *(slice(bb - low, bb - low + o)
               for bb, low, o in zip(begin, lo, out, strict=True)))]
    if b is not None:
        y = y + b.astype(ct, copy=False).reshape(1, -1, *([1] * n_sp))
    return np.ascontiguousarray(y).astype(x.dtype, copy=False)


# -- Pools -----------------------------------------------------------------------------

def _pool_geometry(x: np.ndarray, auto_pad: str | None, ceil_mode: Any, dilations: Any,
                   kernel_shape: Any, pads: Any, strides: Any
                   ) -> tuple[list[int], list[int], list[int], list[int], list[int], list[int]]:
    """(kernel, dilations, strides, begin pads, end pads, output shape), as the spec's
    pooling shape rules say (ceil_mode drops a last window that starts in the end pad)."""
    n_sp = x.ndim - 2
    kernel = [int(k) for k in kernel_shape]
    dil = _ints(dilations, n_sp, 1)
    st = _ints(strides, n_sp, 1)
    eff = [(k - 1) * d + 1 for k, d in zip(kernel, dil, strict=True)]
    size = x.shape[2:]
    mode = auto_pad or "NOTSET"
    if mode in ("SAME_UPPER", "SAME_LOWER", "VALID"):
        begin, end = _auto_pads(mode, size, eff, st, pads, True)
        out = ([-(-d // s) for d, s in zip(size, st, strict=True)] if mode != "VALID" else
               [(d - k) // s + 1 for d, k, s in zip(size, eff, st, strict=True)])
        return kernel, dil, st, begin, end, out
    p = _ints(pads, 2 * n_sp, 0)
    begin, end = p[:n_sp], p[n_sp:]
    out = []
    for i, (d, k, s) in enumerate(zip(size, eff, st, strict=True)):
        span = d + begin[i] + end[i] - k
        o = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (o - 1) * s >= d + begin[i]:
            o -= 1
        out.append(o)
    return kernel, dil, st, begin, end, out


def _extended(x: np.ndarray, begin: Sequence[int], end: Sequence[int], out: Sequence[int],
              eff: Sequence[int], st: Sequence[int], fill: float = 0) -> np.ndarray:
    """``x`` padded so that every window fits (a ceil_mode window may run past the pads)."""
    tail = [max(e, (o - 1) * s + k - d - b) for d, b, e, o, k, s in
            zip(x.shape[2:], begin, end, out, eff, st, strict=True)]
    return _pad_view(x, begin, tail, fill)


def _axis_mask(o: int, s: int, offset: int, lo: int, hi: int, axis: int, n_sp: int
               ) -> np.ndarray:
    pos = np.arange(o) * s + offset
    shape = [1] * n_sp
    shape[axis] = o
    return ((pos >= lo) & (pos < hi)).reshape(shape)


def max_pool(x: np.ndarray, auto_pad: str | None, ceil_mode: Any, dilations: Any,
             kernel_shape: Any, pads: Any, storage_order: Any, strides: Any
             ) -> tuple[np.ndarray, np.ndarray]:
    """Y and Indices: the first largest valid element of each window in tap order (a
    padding element never wins), its index into the flattened unpadded input, row-major
    or, with storage_order 1, column-major over the spatial axes."""
    kernel, dil, st, begin, end, out = _pool_geometry(
        x, auto_pad, ceil_mode, dilations, kernel_shape, pads, strides)
    n_sp = x.ndim - 2
    size = x.shape[2:]
    eff = [(k - 1) * d + 1 for k, d in zip(kernel, dil, strict=True)]
    xp = _extended(x, begin, end, out, eff, st)
    shape = (*x.shape[:2], *out)
    y = np.zeros(shape, dtype=x.dtype)
    have = np.zeros(shape, dtype=bool)
    where = np.full(shape, -1, dtype=np.int64)
    # Spatial index strides of the unpadded input, in the requested storage order.
    order = range(n_sp - 1, -1, -1) if not storage_order else range(n_sp)
    scale = [0] * n_sp
    acc = 1
    for i in order:
        scale[i] = acc
        acc *= size[i]
    for tap in itertools.product(*(range(k) for k in kernel)):
        offs = [t * d for t, d in zip(tap, dil, strict=True)]
        view = _tap(xp, offs, st, out)
        valid = np.ones([1] * n_sp, dtype=bool)
        flat = np.zeros([1] * n_sp, dtype=np.int64)
        for i in range(n_sp):
            valid = valid & _axis_mask(out[i], st[i], offs[i], begin[i], begin[i] + size[i],
                                       i, n_sp)
            pos = (np.arange(out[i]) * st[i] + offs[i] - begin[i]).reshape(
                [out[i] if j == i else 1 for j in range(n_sp)])
            flat = flat + pos * scale[i]
        take = valid & (~have | (view > y))
        y = np.where(take, view, y)
        where = np.where(take, flat, where)
        have |= valid
    base = (np.arange(x.shape[0] * x.shape[1], dtype=np.int64) * math.prod(size)).reshape(
        x.shape[0], x.shape[1], *([1] * n_sp))
    return y, np.where(where >= 0, where + base, where)


def average_pool(x: np.ndarray, auto_pad: str | None, ceil_mode: Any, count_include_pad: Any,
                 dilations: Any, kernel_shape: Any, pads: Any, strides: Any) -> np.ndarray:
    """The mean of each window: over its elements inside the input (count_include_pad 0)
    or inside the padded input (1); a ceil_mode window's part past the pads never counts."""
    kernel, dil, st, begin, end, out = _pool_geometry(
        x, auto_pad, ceil_mode, dilations, kernel_shape, pads, strides)
    n_sp = x.ndim - 2
    size = x.shape[2:]
    eff = [(k - 1) * d + 1 for k, d in zip(kernel, dil, strict=True)]
    ct = _compute_dtype(x)
    xp = _extended(x.astype(ct, copy=False), begin, end, out, eff, st)
    total = np.zeros((*x.shape[:2], *out), dtype=ct)
    counts = [np.zeros(o, dtype=np.int64) for o in out]
    for i in range(n_sp):
        lo, hi = (0, begin[i] + size[i] + end[i]) if count_include_pad else \
            (begin[i], begin[i] + size[i])
        for t in range(kernel[i]):
            pos = np.arange(out[i]) * st[i] + t * dil[i]
            counts[i] += (pos >= lo) & (pos < hi)
    count = np.ones([1] * n_sp, dtype=np.int64)
    for i in range(n_sp):
        count = count * counts[i].reshape([out[i] if j == i else 1 for j in range(n_sp)])
    for tap in itertools.product(*(range(k) for k in kernel)):
        offs = [t * d for t, d in zip(tap, dil, strict=True)]
        total += _tap(xp, offs, st, out)  # padding is 0: adding it changes nothing
    with np.errstate(divide="ignore", invalid="ignore"):
        y: np.ndarray = (total / count.astype(ct)).astype(x.dtype, copy=False)
    return y


# -- Recurrent layers ------------------------------------------------------------------

def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        y: np.ndarray = 1 / (1 + np.exp(-x))
    return y


_ACTIVATIONS: dict[str, tuple[int, Callable[..., np.ndarray], tuple[float, ...]]] = {
    # lower-case name: (parameters taken, function, default parameters)
    "sigmoid": (0, lambda x: _sigmoid(x), ()),
    "tanh": (0, lambda x: np.tanh(x), ()),
    "relu": (0, lambda x: np.maximum(x, 0), ()),
    "affine": (2, lambda x, a, b: a * x + b, (1.0, 0.0)),
    "leakyrelu": (1, lambda x, a: np.where(x >= 0, x, a * x), (0.01,)),
    "thresholdedrelu": (1, lambda x, a: np.where(x > a, x, 0), (1.0,)),
    "scaledtanh": (2, lambda x, a, b: a * np.tanh(b * x), (1.0, 1.0)),
    "hardsigmoid": (2, lambda x, a, b: np.clip(a * x + b, 0, 1), (0.2, 0.5)),
    "elu": (1, lambda x, a: np.where(x >= 0, x, a * (np.exp(np.minimum(x, 0)) - 1)), (1.0,)),
    "softsign": (0, lambda x: x / (1 + np.abs(x)), ()),
    "softplus": (0, lambda x: np.logaddexp(0, x), ()),
}


def _activations(names: Any, alphas: Any, betas: Any, defaults: Sequence[str],
                 directions: int) -> list[Callable[[np.ndarray], np.ndarray]]:
    """The activation functions, one per gate function and direction; alpha and beta
    values are consumed in order by the functions that take them (as ONNX Runtime does)."""
    chosen = [n.decode() if isinstance(n, bytes) else str(n) for n in (names or [])]
    if not chosen:
        chosen = list(defaults) * directions
    elif len(chosen) == len(defaults) and directions == 2:
        chosen = chosen * 2
    a_list = [float(v) for v in (alphas if alphas is not None else [])]
    b_list = [float(v) for v in (betas if betas is not None else [])]
    funcs: list[Callable[[np.ndarray], np.ndarray]] = []
    for name in chosen:
        key = name.lower()
        if key not in _ACTIVATIONS:
            raise ValueError(f"unknown recurrent activation {name!r}")
        taken, fn, dflt = _ACTIVATIONS[key]
        params = list(dflt)
        if taken >= 1 and a_list:
            params[0] = a_list.pop(0)
        if taken >= 2 and b_list:
            params[1] = b_list.pop(0)
        funcs.append(_bound(fn, tuple(params)))
    return funcs


def _bound(fn: Callable[..., np.ndarray], params: tuple[float, ...]
           ) -> Callable[[np.ndarray], np.ndarray]:
    def apply(x: np.ndarray) -> np.ndarray:
        return fn(x, *params)

    return apply


def _rnn_layout(x: np.ndarray, initial: list[np.ndarray | None], layout: Any
                ) -> tuple[np.ndarray, list[np.ndarray | None]]:
    if not layout:
        return x, initial
    return np.swapaxes(x, 0, 1), [None if h is None else np.swapaxes(h, 0, 1)
                                  for h in initial]


def _steps(seq: int, lengths: np.ndarray, reverse: bool) -> list[tuple[int, np.ndarray]]:
    """(time step, gather index per batch row) for each step: a reverse pass reads each
    sequence backwards from its own last element."""
    out = []
    for t in range(seq):
        idx = (lengths - 1 - t) if reverse else np.full_like(lengths, t)
        out.append((t, np.clip(idx, 0, max(seq - 1, 0))))
    return out


def recurrent(kind: str, x: np.ndarray, w: np.ndarray, r: np.ndarray, b: np.ndarray | None,
              sequence_lens: np.ndarray | None, initial_h: np.ndarray | None,
              initial_c: np.ndarray | None, p: np.ndarray | None, *, activations: Any,
              activation_alpha: Any, activation_beta: Any, clip: Any, direction: Any,
              hidden_size: Any, input_forget: Any = 0, layout: Any = 0,
              linear_before_reset: Any = 0, n_outputs: int = 3
              ) -> tuple[np.ndarray, ...]:
    """LSTM, GRU or RNN as the specification defines them, every attribute honoured."""
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind]
    defaults = {"LSTM": ("Sigmoid", "Tanh", "Tanh"), "GRU": ("Sigmoid", "Tanh"),
                "RNN": ("Tanh",)}[kind]
    ct = _compute_dtype(x)
    given = x.dtype
    x, (initial_h, initial_c) = _rnn_layout(x, [initial_h, initial_c], layout)
    x = x.astype(ct, copy=False)
    seq, batch = x.shape[:2]
    dirs = w.shape[0]
    hid = r.shape[-1]
    dname = direction.decode() if isinstance(direction, bytes) else (direction or "forward")
    expected = 2 if dname == "bidirectional" else 1
    if dname not in ("forward", "reverse", "bidirectional") or dirs != expected:
        raise ValueError(f"{kind}: direction {dname!r} with {dirs} weight direction(s)")
    funcs = _activations(activations, activation_alpha, activation_beta, defaults, dirs)
    per = len(defaults)
    lengths = (np.full(batch, seq, dtype=np.int64) if sequence_lens is None
               else np.asarray(sequence_lens, dtype=np.int64).reshape(batch))
    bias = (np.zeros((dirs, 2 * gates * hid), dtype=ct) if b is None
            else b.astype(ct, copy=False))
    peep = (np.zeros((dirs, 3 * hid), dtype=ct) if p is None else p.astype(ct, copy=False))
    h0 = (np.zeros((dirs, batch, hid), dtype=ct) if initial_h is None
          else initial_h.astype(ct, copy=False))
    c0 = (np.zeros((dirs, batch, hid), dtype=ct) if initial_c is None
          else initial_c.astype(ct, copy=False))
    threshold = None if clip is None else float(clip)

    def clipped(v: np.ndarray) -> np.ndarray:
        return v if threshold is None else np.clip(v, -threshold, threshold)

    y = np.zeros((seq, dirs, batch, hid), dtype=ct)
    y_h = np.zeros((dirs, batch, hid), dtype=ct)
    y_c = np.zeros((dirs, batch, hid), dtype=ct)
    rows = np.arange(batch)
    for d in range(dirs):
        f, g, h = (funcs[d * per:(d + 1) * per] + [funcs[0]] * 3)[:3]
        wd, rd = w[d].astype(ct, copy=False), r[d].astype(ct, copy=False)
        wb, rb = bias[d, :gates * hid], bias[d, gates * hid:]
        reverse = dname == "reverse" or d == 1
        # One product for every step's input part; only H·Rᵀ waits for the previous step.
        xw = np.matmul(x, wd.T)  # (seq, batch, gates*hid)
        if kind != "GRU":
            xw += wb + rb
        else:
            xw += wb
        h_t, c_t = h0[d].copy(), c0[d].copy()
        for t, idx in _steps(seq, lengths, reverse):
            live = (t < lengths)[:, None]
            xt = xw[idx, rows]
            if kind == "LSTM":
                pi, po, pf = peep[d, :hid], peep[d, hid:2 * hid], peep[d, 2 * hid:]
                z = xt + h_t @ rd.T
                zi, zo, zf, zc = (z[:, k * hid:(k + 1) * hid] for k in range(4))
                i = f(clipped(zi + pi * c_t))
                fg = (1 - i) if input_forget else f(clipped(zf + pf * c_t))
                c_new = fg * c_t + i * g(clipped(zc))
                o = f(clipped(zo + po * c_new))
                h_new = o * h(c_new)
                c_t = np.where(live, c_new, c_t)
            elif kind == "GRU":
                hr = h_t @ rd.T  # (batch, 3*hid): z, r, h parts
                zz = f(clipped(xt[:, :hid] + hr[:, :hid] + rb[:hid]))
                rr = f(clipped(xt[:, hid:2 * hid] + hr[:, hid:2 * hid] + rb[hid:2 * hid]))
                if linear_before_reset:
                    hh = g(clipped(xt[:, 2 * hid:] + rr * (hr[:, 2 * hid:] + rb[2 * hid:])))
                else:
                    hh = g(clipped(xt[:, 2 * hid:] + (rr * h_t) @ rd[2 * hid:].T
                                   + rb[2 * hid:]))
                h_new = (1 - zz) * hh + zz * h_t
            else:
                h_new = f(clipped(xt + h_t @ rd.T))
            h_t = np.where(live, h_new, h_t)
            y[idx[live[:, 0]], d, rows[live[:, 0]]] = h_new[live[:, 0]]
        y_h[d], y_c[d] = h_t, c_t
    if layout:
        outs: list[np.ndarray] = [np.transpose(y, (2, 0, 1, 3)), np.swapaxes(y_h, 0, 1),
                                  np.swapaxes(y_c, 0, 1)]
    else:
        outs = [y, y_h, y_c]
    wanted = outs[:n_outputs] if kind == "LSTM" else outs[:min(n_outputs, 2)]
    return tuple(np.ascontiguousarray(o).astype(given, copy=False) for o in wanted)


# -- Registration ----------------------------------------------------------------------

def _ones(values: Any) -> bool:
    return values is None or all(int(v) == 1 for v in values)


def stock_pool_geometry_differs(op_type: str, auto_pad: Any, dilations: Any, strides: Any,
                                kernel_shape: Any) -> bool:
    """Where onnx's pools size their windows their own way (auto_pad with dilations;
    MaxPool's SAME_LOWER with strides keeps floor(in / stride) windows; a SAME kernel
    narrower than its stride gets a negative pad): the spec text is not settled there
    (ONNX Runtime differs from both or refuses), so both paths keep onnx's code."""
    mode = _text(auto_pad) or "NOTSET"
    if mode == "NOTSET":
        return False
    narrow = mode != "VALID" and any(
        int(k) < int(s) for k, s in zip(kernel_shape, strides or [1] * len(kernel_shape),
                                        strict=True))
    return narrow or not _ones(dilations) or (op_type == "MaxPool" and mode == "SAME_LOWER"
                                              and not _ones(strides))


def stock_ignores(node: onnx.NodeProto) -> bool:
    """A recurrent node onnx's own operator runs wrongly: it sets clip, input_forget, its
    own activations (or their parameters), or feeds sequence_lens."""
    defaults = {"LSTM": ["sigmoid", "tanh", "tanh"], "GRU": ["sigmoid", "tanh"],
                "RNN": ["tanh"]}[node.op_type]
    for a in node.attribute:
        value = onnx.helper.get_attribute_value(a)
        if a.name in ("clip", "activation_alpha", "activation_beta") or (
                a.name == "input_forget" and value):
            return True
        if a.name == "activations":
            names = [v.decode().lower() for v in value]
            if names not in (defaults, defaults * 2):
                return True
    return len(node.input) > 4 and bool(node.input[4])


def _stock(op_type: str, opset: int) -> type[OpRun]:
    from onnx.reference.ops import load_op

    cls: type[OpRun] = load_op("", op_type, opset)
    return cls


def fast_ops(opset: int, complete: bool) -> list[type[OpRun]]:
    """``new_ops`` for a model of default-domain ``opset`` (see the module docstring)."""
    conv_stock: Any = _stock("Conv", opset)
    ct_stock: Any = _stock("ConvTranspose", opset)
    mp_stock: Any = _stock("MaxPool", opset)
    ap_stock: Any = _stock("AveragePool", opset)

    class Conv(conv_stock):  # type: ignore[misc]
        op_schema = onnx.defs.get_schema("Conv", opset, "")

        def _run(self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None,
                 auto_pad: Any = None, dilations: Any = None, group: Any = None,
                 kernel_shape: Any = None, pads: Any = None, strides: Any = None
                 ) -> tuple[np.ndarray]:
            return (conv(x, w, b, _text(auto_pad), dilations, group, kernel_shape, pads,
                         strides),)

    class ConvTranspose(ct_stock):  # type: ignore[misc]
        op_schema = onnx.defs.get_schema("ConvTranspose", opset, "")

        # onnx's own grouped ConvTranspose calls _run back with these argument names.
        def _run(self, X: np.ndarray, W: np.ndarray, B: np.ndarray | None = None,
                 auto_pad: Any = None, dilations: Any = None, group: Any = None,
                 kernel_shape: Any = None, output_padding: Any = None,
                 output_shape: Any = None, pads: Any = None, strides: Any = None
                 ) -> tuple[np.ndarray]:
            if not complete and (int(group or 1) > 1 or (
                    output_shape is not None and len(output_shape)
                    and _text(auto_pad) not in ("SAME_UPPER", "SAME_LOWER"))):
                # onnx's own: its grouped path slices W by output channel, and with
                # output_shape it keeps zero pads instead of the spec's total padding
                stock = _AsStock(self, ct_stock)  # its recursion must not land here
                kept: tuple[np.ndarray] = _given(
                    stock._run, X, W, B, auto_pad=auto_pad, dilations=dilations, group=group,
                    kernel_shape=kernel_shape, output_padding=output_padding,
                    output_shape=output_shape, pads=pads, strides=strides)
                return kept
            return (conv_transpose(X, W, B, _text(auto_pad), dilations, group, kernel_shape,
                                   output_padding, output_shape, pads, strides),)

    class MaxPool(mp_stock):  # type: ignore[misc]
        op_schema = onnx.defs.get_schema("MaxPool", opset, "")

        def _run(self, x: np.ndarray, auto_pad: Any = None, ceil_mode: Any = None,
                 dilations: Any = None, kernel_shape: Any = None, pads: Any = None,
                 storage_order: Any = None, strides: Any = None
                 ) -> tuple[np.ndarray, ...]:
            indices = len([o for o in self.onnx_node.output if o]) > 1
            if stock_pool_geometry_differs("MaxPool", auto_pad, dilations, strides,
                                           kernel_shape) or (
                    not complete and indices and _ones(strides) and _ones(dilations)):
                # onnx's unit-stride MaxPool (a separate code path) has its own Indices
                kept: tuple[np.ndarray, ...] = _given(
                    super()._run, x, auto_pad=auto_pad, ceil_mode=ceil_mode,
                    dilations=dilations, kernel_shape=kernel_shape, pads=pads,
                    storage_order=storage_order, strides=strides)
                return kept
            y, idx = max_pool(x, _text(auto_pad), ceil_mode, dilations, kernel_shape, pads,
                              storage_order, strides)
            return (y, idx) if indices else (y,)

    class AveragePool(ap_stock):  # type: ignore[misc]
        op_schema = onnx.defs.get_schema("AveragePool", opset, "")

        def _run(self, x: np.ndarray, auto_pad: Any = None, ceil_mode: Any = None,
                 count_include_pad: Any = None, dilations: Any = None,
                 kernel_shape: Any = None, pads: Any = None, strides: Any = None
                 ) -> tuple[np.ndarray]:
            if stock_pool_geometry_differs("AveragePool", auto_pad, dilations, strides,
                                           kernel_shape):
                kept: tuple[np.ndarray] = _given(
                    super()._run, x, auto_pad=auto_pad, ceil_mode=ceil_mode,
                    count_include_pad=count_include_pad, dilations=dilations,
                    kernel_shape=kernel_shape, pads=pads, strides=strides)
                return kept
            return (average_pool(x, _text(auto_pad), ceil_mode, count_include_pad, dilations,
                                 kernel_shape, pads, strides),)

    ops: list[type[OpRun]] = [
        Conv, ConvTranspose, MaxPool, AveragePool,
        *(recurrent_op(kind, opset, complete) for kind in ("LSTM", "GRU", "RNN"))]
    if opset >= CONV_INTEGER_SINCE:
        ci_stock: Any = _stock("ConvInteger", opset)

        class ConvInteger(ci_stock):  # type: ignore[misc]
            op_schema = onnx.defs.get_schema("ConvInteger", opset, "")

            def _run(self, x: np.ndarray, w: np.ndarray, x_zero_point: Any = None,
                     w_zero_point: Any = None, auto_pad: Any = None, dilations: Any = None,
                     group: Any = None, kernel_shape: Any = None, pads: Any = None,
                     strides: Any = None) -> tuple[np.ndarray]:
                return (conv_integer(x, w, x_zero_point, w_zero_point,
                                     _text(auto_pad or self.auto_pad),
                                     dilations or self.dilations, group or self.group,
                                     kernel_shape or self.kernel_shape, pads or self.pads,
                                     strides or self.strides),)

        ops.append(ConvInteger)
    return ops


class _AsStock:
    """An operator seen as onnx's own class: its ``_run`` calls back into onnx's code."""

    def __init__(self, op: OpRun, stock: Any) -> None:
        self._op, self._stock = op, stock

    def __getattr__(self, name: str) -> Any:
        return getattr(self._op, name)

    def _run(self, *args: Any, **attrs: Any) -> Any:
        return self._stock._run(self, *args, **attrs)


def _given(stock_run: Callable[..., Any], *args: Any, **attrs: Any) -> Any:
    """onnx's own ``_run`` with the attributes this opset has (older ones lack some)."""
    return stock_run(*args, **{k: v for k, v in attrs.items() if v is not None})


def _text(value: Any) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


def recurrent_op(kind: str, opset: int, complete: bool) -> type[OpRun]:
    """LSTM, GRU or RNN for a model of ``opset`` (``complete``: see the module docstring)."""
    stock: Any = _stock(kind, opset)
    schema = onnx.defs.get_schema(kind, opset, "")

    def _run(self: Any, x: np.ndarray, w: np.ndarray, r: np.ndarray,
             b: np.ndarray | None = None, sequence_lens: np.ndarray | None = None,
             initial_h: np.ndarray | None = None, *rest: Any, **attrs: Any
             ) -> tuple[np.ndarray, ...]:
        initial_c = rest[0] if kind == "LSTM" and rest else None
        p = rest[1] if kind == "LSTM" and len(rest) > 1 else None
        values = {k: getattr(self, k, None) for k in schema.attributes}
        values.update({k: v for k, v in attrs.items() if v is not None})
        if not complete and stock_ignores(self.onnx_node):
            args = (x, w, r, b, sequence_lens, initial_h, *rest)
            result: tuple[np.ndarray, ...] = stock._run(self, *args, **attrs)
            return result
        n_out = len(self.onnx_node.output)
        outs = recurrent(kind, x, w, r, b, sequence_lens, initial_h, initial_c, p,
                         activations=values.get("activations"),
                         activation_alpha=values.get("activation_alpha"),
                         activation_beta=values.get("activation_beta"),
                         clip=values.get("clip"), direction=values.get("direction"),
                         hidden_size=values.get("hidden_size"),
                         input_forget=values.get("input_forget") or 0,
                         layout=values.get("layout") or 0,
                         linear_before_reset=values.get("linear_before_reset") or 0,
                         n_outputs=n_out)
        return outs

    # The complete operator owes nothing to onnx's class (whose __init__ refuses some
    # valid attribute lists, e.g. RNN's activation_alpha of one value per function).
    return type(kind, (OpRun if complete else stock,), {"op_schema": schema, "_run": _run})

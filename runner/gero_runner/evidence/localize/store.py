"""The stored result: ``localize/OBSERVATION_ID.json`` beside the evidence, with the tensors
of its origins and amplifiers (``localize/OBSERVATION_ID.npz``) for the explorer, each file
whole or not at all; and the first origin written as a repro directory (``-o``)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from gero_runner.errors import GeroError
from gero_runner.evidence.localization import Localization
from gero_runner.storage.artifacts import LOCALIZE_DIR, read_json_object
from gero_runner.storage.outputs import output_error, store_beside_evidence


def localize_path(directory: Path, observation_id: str) -> Path:
    return directory / LOCALIZE_DIR / f"{observation_id}.json"


def store_localization(directory: Path, loc: Localization, kept: dict[str, np.ndarray],
                       data_root: Path) -> Path:
    """Keep the result (and its nodes' tensors) beside the evidence, outside the manifest,
    each file whole or not at all (a full disk or a read-only root is one sentence)."""
    path = localize_path(directory, loc.observation_id)
    tensors = path.with_suffix(".npz")

    def save_tensors(name: str) -> None:
        with open(name, "wb") as f:
            save: Any = np.savez  # numpy's stubs type its keyword arrays as flags
            save(f, **{k.replace("/", "|"): v for k, v in kept.items()})

    if kept:
        store_beside_evidence(tensors, save_tensors, data_root)
    try:
        store_beside_evidence(path, json.dumps(loc.as_dict(), indent=2,
                                               default=_json_default).encode(), data_root)
    except GeroError:
        if kept and not path.exists():  # no result to go with the tensors just written
            tensors.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                path.parent.rmdir()
        raise
    return path


def _json_default(value: Any) -> Any:
    if isinstance(value, float | np.floating):
        return float(value)
    if isinstance(value, np.integer):
        return int(value)
    raise TypeError(f"not JSON: {type(value).__name__}")


def read_localization(directory: Path, observation_id: str) -> dict[str, Any] | None:
    """A stored localization, or None (an unreadable one counts as none)."""
    return read_json_object(localize_path(directory, observation_id))


def read_kept_tensors(directory: Path, observation_id: str) -> dict[str, np.ndarray]:
    """The tensors a localization kept for its nodes (empty when none were)."""
    path = localize_path(directory, observation_id).with_suffix(".npz")
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k.replace("|", "/"): np.asarray(data[k]) for k in data.files}
    except (OSError, ValueError):
        return {}



def write_origin_repro(output: Path, repro: bytes | None, kept: dict[str, np.ndarray],
                       loc: Localization, row: dict[str, Any], timeout_s: float,
                       reuse_root: str = "") -> Localization:
    """The first origin's region (``repro``, its inputs and expected output among ``kept``)
    written as a repro directory at ``output`` that ``gero replay`` runs again (its paths
    reusing what ``reuse_root`` kept, ``write_repro``); the localization that names it."""
    if repro is None:
        raise GeroError(f"-o {output}: no origin was found, so there is no node to "
                        f"write as a repro ({loc.summary})")
    from gero_runner.evidence.repro import write_repro

    feeds = {k.removeprefix("repro/in/"): v for k, v in kept.items()
             if k.startswith("repro/in/")}
    expected = {k.removeprefix("repro/out/"): v for k, v in kept.items()
                if k.startswith("repro/out/")}
    try:
        write_repro(output, repro, feeds, expected, loc, row, timeout_s, reuse_root)
    except OSError as e:
        raise output_error(output, e) from None
    return Localization(**{**loc.__dict__, "repro": str(output)})

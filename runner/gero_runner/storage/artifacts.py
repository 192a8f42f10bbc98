"""Evidence directories: the graph, inputs and every path's outputs, with a SHA-256 manifest.

A directory is written once, atomically (temporary directory, then rename), and named by the
hash of its manifest, so a rerun that produces identical evidence reuses it. Each directory is
also a valid ONNX backend test directory (``model.onnx`` + ``test_data_set_0``).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from gero_runner.errors import ArtifactError
from gero_runner.storage.hashing import load_npy, npy_bytes, sha256

MANIFEST = "manifest.json"
ARTIFACTS_DIR = "artifacts"


class EvidenceWriter:
    """Collects the files of one case in memory, then writes them under a content address."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def add_bytes(self, relpath: str, data: bytes) -> str:
        self.files[relpath] = data
        return relpath

    def add_array(self, relpath: str, x: np.ndarray) -> str:
        return self.add_bytes(relpath, npy_bytes(x))

    def add_json(self, relpath: str, payload: object) -> str:
        return self.add_bytes(relpath, json.dumps(payload, indent=2, sort_keys=True).encode())

    def add_test_data_set(self, inputs: list[tuple[str, np.ndarray]],
                          outputs: list[tuple[str, np.ndarray]]) -> None:
        """The ONNX backend test layout: test_data_set_0/input_N.pb and output_N.pb."""
        # Deferred: reading evidence (the explorer's detail view) must not pay onnx's import.
        from onnx import numpy_helper

        for i, (name, x) in enumerate(inputs):
            tensor = numpy_helper.from_array(np.asarray(x), name=name)
            self.add_bytes(f"test_data_set_0/input_{i}.pb", tensor.SerializeToString())
        for i, (name, x) in enumerate(outputs):
            tensor = numpy_helper.from_array(np.asarray(x), name=name)
            self.add_bytes(f"test_data_set_0/output_{i}.pb", tensor.SerializeToString())

    def manifest(self) -> dict[str, object]:
        return {"algorithm": "sha256",
                "files": {k: sha256(v) for k, v in sorted(self.files.items())}}

    def write(self, data_root: Path) -> str:
        """Write the directory (if new) and return its path relative to the data root."""
        manifest = self.manifest()
        key = sha256(json.dumps(manifest, sort_keys=True).encode())
        relative = f"{ARTIFACTS_DIR}/{key[:2]}/{key[:24]}"
        final = data_root / relative
        if (final / MANIFEST).exists():
            return relative
        final.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=final.parent))
        try:
            for rel, data in self.files.items():
                path = staging / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
            (staging / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))
            try:
                os.rename(staging, final)
            except OSError:
                # Another writer published identical evidence first: keep theirs.
                if not (final / MANIFEST).exists():
                    raise
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
        return relative


def resolve_artifact(data_root: Path, relative: str) -> Path:
    """The artifact directory of a row; refuses paths that escape the data root."""
    root = data_root.resolve()
    path = (root / relative).resolve()
    if not path.is_relative_to(root):
        raise ArtifactError(f"artifact path {relative!r} points outside the data root {root}")
    return path


def safe_member(directory: Path, relative: str) -> Path:
    """A file inside an artifact directory; refuses names that escape it."""
    base = directory.resolve()
    path = (base / relative).resolve()
    if not path.is_relative_to(base):
        raise ArtifactError(f"file {relative!r} points outside the artifact directory {base}")
    return path


def verify_manifest(directory: Path) -> dict[str, str]:
    """Check every file against manifest.json; raise naming the first bad file."""
    manifest_path = directory / MANIFEST
    if not manifest_path.is_file():
        raise ArtifactError(f"{manifest_path}: manifest.json is missing")
    try:
        manifest = json.loads(manifest_path.read_text())
        files: dict[str, str] = dict(manifest["files"])
    except (ValueError, KeyError, TypeError) as e:
        raise ArtifactError(f"{manifest_path}: not a gero manifest ({e})") from e
    for rel, expected in files.items():
        path = safe_member(directory, rel)
        if not path.is_file():
            raise ArtifactError(f"{rel}: listed in the manifest but missing from {directory}")
        actual = sha256(path.read_bytes())
        if actual != expected:
            raise ArtifactError(
                f"{rel}: SHA-256 mismatch, manifest says {expected}, file has {actual} "
                "(the file was modified)"
            )
    return files


def load_array(directory: Path, relative: str) -> np.ndarray:
    """Load an .npy file of an artifact directory, pickles disabled."""
    path = safe_member(directory, relative)
    try:
        return load_npy(path.read_bytes())
    except (OSError, ValueError) as e:
        raise ArtifactError(f"{path}: cannot load tensor ({e})") from e

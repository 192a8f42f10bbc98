"""Evidence directories: the graph, inputs and every path's outputs, with a SHA-256 manifest.

A directory is written once, atomically (temporary directory, then rename), and named by the
hash of its manifest, so a rerun that produces identical evidence reuses it. Each directory is
also a valid ONNX backend test directory (``model.onnx`` + ``test_data_set_0``).

Every tensor (the inputs, each path's outputs, the two sides of each law) is a ``.npy``
member of one uncompressed ``tensors.npz`` under its logical path (``inputs/input_0.npy``),
because creating files dominates the cost of evidence on slow disks (a case has dozens of
tensors; the ONNX test data beside them holds the inputs as loose ``.pb`` files anyway).
The manifest lists each member's SHA-256 too, so a changed tensor is named. ``load_array``
and ``has_member`` read either form (older evidence kept its inputs as loose files).

A writer with a budget (``--max-evidence-mb``) keeps the tensors of its case within it: past
it, a tensor is kept as a summary (``storage.budget``) listed in ``summaries.json``, and the
ONNX test data set is left out; ``load_array`` of a summarised tensor says so in a sentence.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from gero_runner.errors import ArtifactError, GeroError
from gero_runner.storage.budget import SUMMARIES, mib, tensor_summary
from gero_runner.storage.hashing import load_npy, npy_bytes, sha256
from gero_runner.storage.locks import dir_mode

MANIFEST = "manifest.json"
DERIVED_DIR = "blame"
"""Results computed later from the evidence (``gero blame``), kept beside it and outside
the manifest; never read as evidence."""
LOCALIZE_DIR = "localize"
"""``gero localize``'s results, derived like blame's."""
DERIVED_DIRS = (DERIVED_DIR, LOCALIZE_DIR)
ARTIFACTS_DIR = "artifacts"
PACKED = "tensors.npz"
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed timestamps: identical evidence, identical bytes


def is_packed(relpath: str) -> bool:
    """Tensors live inside tensors.npz."""
    return relpath.endswith(".npy")


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name in sorted(members):
            info = zipfile.ZipInfo(name, date_time=_ZIP_EPOCH)
            info.external_attr = 0o644 << 16
            archive.writestr(info, members[name])
    return buffer.getvalue()


def _is_tensor(relpath: str) -> bool:
    return is_packed(relpath) or relpath.endswith(".pb")


class EvidenceWriter:
    """Collects the files of one case in memory, then writes them under a content address.

    ``budget``: bytes of tensors the case may keep (None: no bound); see the module doc.
    """

    def __init__(self, budget: int | None = None) -> None:
        self.files: dict[str, bytes] = {}
        self.budget = budget
        self.tensor_bytes = 0
        """Bytes of tensors kept so far (.npy members and test-data .pb files)."""
        self.summaries: dict[str, dict[str, object]] = {}
        """Tensors kept as summaries, by logical path."""
        self.summarised: dict[str, np.ndarray] = {}
        """The arrays behind them, while the case is evaluated (its rows' worst elements)."""
        self.omitted: list[str] = []
        """What was left out whole (the ONNX test data set)."""

    def fits(self, nbytes: int) -> bool:
        return self.budget is None or self.tensor_bytes + nbytes <= self.budget

    def add_bytes(self, relpath: str, data: bytes) -> str:
        if _is_tensor(relpath):
            self.tensor_bytes += len(data) - len(self.files.get(relpath, b""))
        self.files[relpath] = data
        return relpath

    def add_array(self, relpath: str, x: np.ndarray, keep: bool = False) -> str:
        """Add a tensor; past the budget (unless ``keep``: the inputs), its summary."""
        if not keep and not self.fits(x.nbytes + 128):  # 128: the .npy header
            assert self.budget is not None
            self.summaries[relpath] = tensor_summary(x, self.budget)
            self.summarised[relpath] = x
            return relpath
        return self.add_bytes(relpath, npy_bytes(x))

    def array(self, relpath: str) -> np.ndarray | None:
        """A tensor added to this case (stored or summarised), or None."""
        if relpath in self.summarised:
            return self.summarised[relpath]
        data = self.files.get(relpath) if is_packed(relpath) else None
        return None if data is None else load_npy(data)

    def add_json(self, relpath: str, payload: object) -> str:
        return self.add_bytes(relpath, json.dumps(payload, indent=2, sort_keys=True).encode())

    def add_test_data_set(self, inputs: list[tuple[str, np.ndarray]],
                          outputs: list[tuple[str, np.ndarray]]) -> None:
        """The ONNX backend test layout: test_data_set_0/input_N.pb and output_N.pb."""
        # Deferred: reading evidence (the explorer's detail view) must not pay onnx's import.
        from onnx import numpy_helper

        size = sum(np.asarray(x).nbytes for _, x in [*inputs, *outputs])
        if not self.fits(size):  # a copy for other tools: the first thing left out
            self.omitted.append(f"test_data_set_0 ({mib(size)})")
            return
        for i, (name, x) in enumerate(inputs):
            tensor = numpy_helper.from_array(np.asarray(x), name=name)
            self.add_bytes(f"test_data_set_0/input_{i}.pb", tensor.SerializeToString())
        for i, (name, x) in enumerate(outputs):
            tensor = numpy_helper.from_array(np.asarray(x), name=name)
            self.add_bytes(f"test_data_set_0/output_{i}.pb", tensor.SerializeToString())

    def physical_files(self) -> dict[str, bytes]:
        """The files as written: loose files plus one tensors.npz holding the packed ones."""
        loose = {k: v for k, v in self.files.items() if not is_packed(k)}
        packed = {k: v for k, v in self.files.items() if is_packed(k)}
        if packed:
            loose[PACKED] = _zip(packed)
        if self.summaries:
            loose[SUMMARIES] = json.dumps(self.summaries, indent=2, sort_keys=True).encode()
        return loose

    def manifest(self, physical: dict[str, bytes] | None = None) -> dict[str, object]:
        physical = self.physical_files() if physical is None else physical
        manifest: dict[str, object] = {
            "algorithm": "sha256",
            "files": {k: sha256(v) for k, v in sorted(physical.items())},
        }
        packed = {k: sha256(v) for k, v in sorted(self.files.items()) if is_packed(k)}
        if packed:
            manifest["packed"] = {PACKED: packed}
        return manifest

    def directory(self) -> tuple[str, dict[str, bytes]]:
        """The directory's path relative to the data root, and its files (the manifest
        among them) as ``write`` writes them."""
        physical = self.physical_files()
        manifest = self.manifest(physical)
        key = sha256(json.dumps(manifest, sort_keys=True).encode())
        return (f"{ARTIFACTS_DIR}/{key[:2]}/{key[:24]}",
                {**physical, MANIFEST: json.dumps(manifest, indent=2, sort_keys=True).encode()})

    def write(self, data_root: Path) -> str:
        """Write the directory (if new) and return its path relative to the data root."""
        relative, files = self.directory()
        _write_directory(data_root, relative, files)
        return relative


_RELATIVE = re.compile(rf"{ARTIFACTS_DIR}/([0-9a-f]{{2}})/([0-9a-f]{{24}})")


def publish(data_root: Path | str, relative: str, files: dict[str, bytes]) -> None:
    """Write an evidence directory's files (``MANIFEST`` among them) at ``relative`` under
    the data root, atomically, unless it is there already. Evidence that a remote worker
    made (``EvidenceWriter.directory``) is published here as a local run writes its own;
    a directory whose manifest does not hash to its name, or a file outside it, is refused.
    """
    match = _RELATIVE.fullmatch(relative)
    manifest = files.get(MANIFEST)
    if (match is None or manifest is None or match[1] != match[2][:2]
            or not sha256(json.dumps(json.loads(manifest), sort_keys=True).encode()
                          ).startswith(match[2])
            or any(os.path.isabs(k) or ".." in k.split("/") for k in files)):
        raise ArtifactError(f"refusing evidence directory {relative!r}: its name is not the "
                            "hash of its manifest, or a file lies outside it")
    _write_directory(data_root, relative, files)


def _write_directory(data_root: Path | str, relative: str, files: dict[str, bytes]) -> None:
    final = os.path.join(data_root, relative)
    if os.path.exists(os.path.join(final, MANIFEST)):
        return
    # Directory operations are the dearest part of evidence on slow disks: the prefix
    # directory is made only when the first artifact under it finds it missing.
    parent = os.path.dirname(final)
    try:
        staging = tempfile.mkdtemp(prefix=".tmp-", dir=parent)
    except FileNotFoundError:
        os.makedirs(parent, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".tmp-", dir=parent)
    try:
        os.chmod(staging, dir_mode())  # mkdtemp's 0700 would hide it from the team
        made = {""}
        # The manifest last: a directory with a manifest is complete.
        for rel in sorted(files, key=lambda k: k == MANIFEST):
            folder = os.path.dirname(rel)
            if folder not in made:  # one mkdir per directory, not per file
                os.makedirs(os.path.join(staging, folder), exist_ok=True)
                made.add(folder)
            with open(os.path.join(staging, rel), "wb") as f:
                f.write(files[rel])
        try:
            os.rename(staging, final)
        except OSError:
            # Another writer published identical evidence first: keep theirs.
            if not os.path.exists(os.path.join(final, MANIFEST)):
                raise
    finally:
        if os.path.exists(staging):
            shutil.rmtree(staging, ignore_errors=True)


def _inside(base: Path, relative: str) -> Path | None:
    """``base / relative`` resolved, or None when it escapes ``base``."""
    root = base.resolve()
    path = (root / relative).resolve()
    return path if path.is_relative_to(root) else None


def resolve_artifact(data_root: Path, relative: str) -> Path:
    """The artifact directory of a row; refuses paths that escape the data root."""
    path = _inside(data_root, relative)
    if path is None:
        raise ArtifactError(
            f"artifact path {relative!r} points outside the data root {data_root.resolve()}")
    return path


def evidence_directory(data_root: Path, row: Mapping[str, Any]) -> Path:
    """The evidence directory an observation row's blame or localization runs from; a
    sentence (GeroError) when the row kept none or it is gone."""
    relative = str(row.get("artifact_path") or "")
    if not relative:
        raise GeroError(f"observation {str(row.get('observation_id', ''))[:12]} has no "
                        "evidence directory: nothing to run")
    directory = resolve_artifact(data_root, relative)
    if not directory.is_dir():
        raise GeroError(f"evidence directory {directory} is missing: nothing to run")
    return directory


def row_json(row: Mapping[str, Any], column: str) -> dict[str, Any]:
    """A JSON column of a row (``session_settings``, ``details``) as a dict; empty when it is
    absent or not a JSON object."""
    try:
        value = json.loads(row.get(column) or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def read_json_object(path: Path) -> dict[str, Any] | None:
    """A JSON object kept beside the evidence (a blame, a localization), or None: an absent
    or unreadable one counts as none."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def safe_member(directory: Path, relative: str) -> Path:
    """A file inside an artifact directory; refuses names that escape it."""
    path = _inside(directory, relative)
    if path is None:
        raise ArtifactError(
            f"file {relative!r} points outside the artifact directory {directory.resolve()}")
    return path


def verify_manifest(directory: Path) -> dict[str, str]:
    """Check every file against manifest.json; raise naming the first bad file."""
    manifest_path = directory / MANIFEST
    present = _plain_files(directory)  # first: nothing is read through a link
    if not manifest_path.is_file():
        raise ArtifactError(f"{manifest_path}: manifest.json is missing")
    try:
        manifest = json.loads(manifest_path.read_text())
        files: dict[str, str] = dict(manifest["files"])
    except (ValueError, KeyError, TypeError) as e:
        raise ArtifactError(f"{manifest_path}: not a gero manifest ({e})") from e
    if not files:
        raise ArtifactError(f"{manifest_path}: the manifest lists no files, so it proves nothing")
    unlisted = sorted(p for p in set(present) - set(files) - {MANIFEST}
                      if not p.startswith(tuple(f"{d}/" for d in DERIVED_DIRS)))
    if unlisted:
        raise ArtifactError(f"{unlisted[0]}: in {directory} but not in its manifest (a "
                            "manifest must cover every file of the case)")
    for rel, expected in files.items():
        path = safe_member(directory, rel)
        if not path.is_file():
            raise ArtifactError(f"{rel}: listed in the manifest but missing from {directory}")
        actual = sha256(path.read_bytes())
        if actual != expected:
            if rel == PACKED:
                _name_changed_member(path, manifest.get("packed", {}).get(PACKED, {}))
            raise ArtifactError(
                f"{rel}: SHA-256 mismatch, manifest says {expected}, file has {actual} "
                "(the file was modified)"
            )
    return files


def _plain_files(directory: Path) -> list[str]:
    """Every file under ``directory`` (relative, POSIX); raise on a link or a special file,
    which evidence never contains and which could point outside the directory."""
    if directory.is_symlink():
        raise ArtifactError(f"{directory} is a symbolic link; evidence is plain files only")
    found: list[str] = []
    for folder, dirs, names in os.walk(directory):
        for name in [*dirs, *names]:
            path = Path(folder) / name
            rel = path.relative_to(directory).as_posix()
            if path.is_symlink():
                raise ArtifactError(f"{rel}: a symbolic link in {directory}; evidence members "
                                    "must be plain files")
            if name in names and not path.is_file():
                raise ArtifactError(f"{rel}: not a plain file in {directory}")
            if name in names:
                found.append(rel)
    return found


def _name_changed_member(packed: Path, expected: object) -> None:
    """Raise naming the first tensor of a modified tensors.npz that differs from the
    manifest; return when none can be named (the caller then names the archive)."""
    if not isinstance(expected, dict):
        return
    try:
        with zipfile.ZipFile(packed) as archive:
            names = set(archive.namelist())
            for rel, digest in sorted(expected.items()):
                if rel not in names:
                    raise ArtifactError(f"{rel}: listed in the manifest but missing from {packed}")
                actual = sha256(archive.read(rel))
                if actual != digest:
                    raise ArtifactError(
                        f"{rel} (in {PACKED}): SHA-256 mismatch, manifest says {digest}, "
                        f"file has {actual} (the file was modified)")
    except (OSError, zipfile.BadZipFile):
        return


def _packed_bytes(directory: Path, relative: str) -> bytes | None:
    """A packed tensor's bytes from tensors.npz, or None when it holds no such member."""
    packed = directory / PACKED
    if not packed.is_file():
        return None
    try:
        with zipfile.ZipFile(packed) as archive:
            return archive.read(relative)
    except KeyError:
        return None
    except (OSError, zipfile.BadZipFile) as e:
        raise ArtifactError(f"{packed}: unreadable tensor archive ({e})") from e


def has_member(directory: Path, relative: str) -> bool:
    """Whether the artifact holds ``relative``, loose or packed (never outside the dir)."""
    if safe_member(directory, relative).is_file():
        return True
    if not is_packed(relative) or not (directory / PACKED).is_file():
        return False
    try:
        with zipfile.ZipFile(directory / PACKED) as archive:
            return relative in archive.namelist()
    except (OSError, zipfile.BadZipFile) as e:
        raise ArtifactError(f"{directory / PACKED}: unreadable tensor archive ({e})") from e


def summary_of(directory: Path, relative: str) -> dict[str, object] | None:
    """The summary a tensor was kept as (over its case's evidence budget), or None."""
    path = safe_member(directory, SUMMARIES)
    if not path.is_file():
        return None
    try:
        summaries = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    found = summaries.get(relative) if isinstance(summaries, dict) else None
    return found if isinstance(found, dict) else None


def summarised_text(relative: str, summary: dict[str, object]) -> str:
    return (f"{relative} was kept as a summary only ({summary.get('shape')} "
            f"{summary.get('dtype')}, {summary.get('reason', 'over the evidence budget')}): "
            "its values were not stored")


def load_array(directory: Path, relative: str) -> np.ndarray:
    """Load a tensor of an artifact directory (loose .npy or packed), pickles disabled."""
    path = safe_member(directory, relative)
    try:
        if path.is_file():
            return load_npy(path.read_bytes())
        data = _packed_bytes(directory, relative) if is_packed(relative) else None
        if data is None:
            summary = summary_of(directory, relative)
            if summary is not None:
                raise ArtifactError(summarised_text(relative, summary))
            raise ArtifactError(f"{relative}: no such tensor in {directory}")
        return load_npy(data)
    except (OSError, ValueError) as e:
        raise ArtifactError(f"{path}: cannot load tensor ({e})") from e

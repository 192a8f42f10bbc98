"""The evidence of each finding's representative, copied beside a report for download.

A report is one HTML file; what a reader downloads from it (the graph, the inputs, the
SHA-256 manifest) is a folder beside it that the page links to by relative paths, so the
two travel together (a zip of both, a CI artifact). Per representative's evidence directory:

- ``model.onnx``, the graph, as the manifest records it;
- ``inputs.npz``, the inputs: the ``inputs/*.npy`` members of the case's ``tensors.npz``
  byte for byte (the manifest records each member's SHA-256), or its loose ``inputs/``
  files in older evidence;
- ``manifest.json`` and ``case.json`` as they are.

A file already written for another finding (the same digest: one model behind many
findings) is linked to, not copied again. The folder is written whole beside the report and
replaces the folder of an earlier report of the same name; a folder gero did not write is
never replaced (a marker file tells them apart).
"""

from __future__ import annotations

import hashlib
import io
import shutil
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

from gero.query.findings import Finding
from gero.query.report import DownloadFile, RunReport
from gero_runner.errors import GeroError
from gero_runner.storage.artifacts import MANIFEST, PACKED, read_json_object, resolve_artifact

MARKER = ".gero-report-evidence"
"""In a folder this module wrote: only such a folder is replaced by the next report."""
GRAPH = "model.onnx"
INPUTS = "inputs.npz"
CASE = "case.json"
_INPUT_PREFIX = "inputs/"


def evidence_folder(report: Path) -> Path:
    """The folder beside ``report`` that holds its downloads (``run.html`` ->
    ``run-evidence``)."""
    return report.with_name(f"{report.stem}-evidence")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _inputs(directory: Path) -> bytes | None:
    """The case's inputs as one .npz: the packed members named ``inputs/…`` (their bytes as
    the manifest hashed them), or its loose ``inputs/*.npy`` files; None when it has none."""
    members: dict[str, bytes] = {}
    packed = directory / PACKED
    if packed.is_file():
        try:
            with zipfile.ZipFile(packed) as archive:
                for name in archive.namelist():
                    if name.startswith(_INPUT_PREFIX) and name.endswith(".npy"):
                        members[name[len(_INPUT_PREFIX):]] = archive.read(name)
        except (OSError, zipfile.BadZipFile):
            return None
    loose = directory / "inputs"
    if not members and loose.is_dir() and not loose.is_symlink():
        for file in sorted(loose.glob("*.npy")):
            if file.is_file() and not file.is_symlink():
                members[file.name] = file.read_bytes()
    if not members:
        return None
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for name, data in sorted(members.items()):
            archive.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data)
    return out.getvalue()


def _read(directory: Path, name: str) -> Path | None:
    path = directory / name
    return path if path.is_file() and not path.is_symlink() else None


def _file_digest(path: Path) -> tuple[int, str]:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return path.stat().st_size, digest.hexdigest()


@dataclass
class EvidencePlan:
    """What a report's evidence folder will hold (read and hashed, not written yet): the
    page links to it, then ``write`` puts it beside the page."""

    folder: Path
    downloads: dict[str, tuple[DownloadFile, ...]] = field(default_factory=dict)
    """Per finding id, its downloads."""
    files: dict[str, Path | bytes] = field(default_factory=dict)
    """Relative path in the folder -> the file to copy, or the bytes to write."""
    written: dict[str, str] = field(default_factory=dict)
    """digest -> href of the file that holds it (each digest once)."""

    def add(self, sub: str, label: str, name: str, source: Path | bytes,
            recorded: str | None) -> DownloadFile:
        size, digest = (_file_digest(source) if isinstance(source, Path)
                        else (len(source), _digest(source)))
        href = self.written.get(digest)
        if href is None:
            self.files[f"{sub}/{name}"] = source
            href = "/".join(quote(part) for part in (self.folder.name, sub, name))
            self.written[digest] = href
        return DownloadFile(label, name, href, size, digest,
                            None if recorded is None else recorded == digest)

    def write(self) -> Path:
        """Write the folder whole beside the report, replacing the one an earlier report of
        the same name wrote; a failure is one sentence and leaves no partial folder."""
        folder = self.folder
        try:
            staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
        except OSError as e:
            raise GeroError(f"{folder}: cannot write the report's evidence ({e.strerror or e}); "
                            "the page is written, its download links are not") from e
        try:
            (staging / MARKER).write_text("written by gero report; replaced by the next one\n")
            for relative, source in self.files.items():
                target = staging / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                if isinstance(source, Path):
                    shutil.copyfile(source, target)
                else:
                    target.write_bytes(source)
            if folder.exists():
                shutil.rmtree(folder)
            staging.rename(folder)
        except OSError as e:
            shutil.rmtree(staging, ignore_errors=True)
            raise GeroError(f"{folder}: cannot write the report's evidence ({e.strerror or e}); "
                            "the page is written, its download links are not") from e
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return folder


def plan_evidence(data_root: Path, findings: Iterable[Finding], report: Path) -> EvidencePlan:
    """Each finding's representative evidence, read and hashed for the folder beside
    ``report`` (a representative without evidence, or whose evidence is gone, has none).
    Refuses a folder of that name that gero did not write."""
    folder = evidence_folder(report)
    if folder.is_symlink() or (folder.exists() and not (folder / MARKER).is_file()):
        raise GeroError(f"{folder} exists and is not the evidence folder of a gero report: "
                        "move it, or give -o another name (the report writes its evidence "
                        "to NAME-evidence beside it)")
    plan = EvidencePlan(folder)
    for f in findings:
        rep = f.representative
        if not rep.artifact_path:
            continue
        try:
            directory = resolve_artifact(data_root, rep.artifact_path)
        except GeroError:
            continue
        if directory.is_dir():
            plan.downloads[f.finding_id] = _plan(plan, directory, f"finding-{f.finding_id}")
    return plan


def _plan(plan: EvidencePlan, directory: Path, sub: str) -> tuple[DownloadFile, ...]:
    listed = (read_json_object(directory / MANIFEST) or {}).get("files")
    recorded: dict[str, Any] = listed if isinstance(listed, dict) else {}
    files = []
    for label, name in (("graph", GRAPH), ("case", CASE)):
        path = _read(directory, name)
        if path is not None:
            digest = recorded.get(name)
            files.append(plan.add(sub, label, name, path,
                                  digest if isinstance(digest, str) else ""))
    inputs = _inputs(directory)
    if inputs is not None:
        files.insert(1, plan.add(sub, "inputs", INPUTS, inputs, None))
    manifest = _read(directory, MANIFEST)
    if manifest is not None:
        files.append(plan.add(sub, "manifest", MANIFEST, manifest, None))
    return tuple(files)


def with_downloads(report: RunReport, downloads: dict[str, tuple[DownloadFile, ...]],
                   folder: str) -> RunReport:
    """``report`` whose findings carry their downloads, in the folder named ``folder``."""
    findings = tuple(replace(e, downloads=downloads.get(e.finding.finding_id, ()))
                     for e in report.findings)
    return replace(report, findings=findings, evidence_folder=folder)

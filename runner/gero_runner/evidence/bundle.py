"""Shareable bundles: one case's evidence plus its observation rows, as a .tar.gz.

A bundle holds the artifact directory (graph, inputs, outputs, ONNX test data set), the
observation rows that point to it (``observations.json``), ``bundle.json`` with the chosen
observation and the exact replay command, and a manifest covering all of them, so someone
without the data root can run ``gero replay FILE.tar.gz`` (or extract it and replay the
directory). Extraction accepts only plain files and folders inside the target directory.
"""

from __future__ import annotations

import io
import json
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from gero_runner.errors import ArtifactError
from gero_runner.evidence.rows import OBSERVATIONS_JSON, row_to_json, rows_for_artifact
from gero_runner.schema import observation_from_row
from gero_runner.storage.artifacts import MANIFEST, resolve_artifact, verify_manifest
from gero_runner.storage.hashing import sha256
from gero_runner.storage.store import DataRoot, write_file

BUNDLE_JSON = "bundle.json"
MAX_MEMBER_BYTES = 1 << 30
"""Refuse members over 1 GiB: a bundle is one case, not a model zoo."""
MAX_EXPANDED_BYTES = 1 << 30
"""...and more than 1 GiB in all once extracted (a small archive may expand enormously)."""


@dataclass(frozen=True)
class BundleResult:
    path: Path
    observation_id: str
    folder: str
    """Top-level folder inside the archive (what `tar xzf` creates)."""
    files: int
    rows: int
    size_bytes: int
    replay_command: str


def create_bundle(root: DataRoot, row: dict[str, Any], out: Path) -> BundleResult:
    """Package the artifact of ``row`` (an observation row of ``root``) into ``out``."""
    relative = str(row.get("artifact_path") or "")
    if not relative:
        raise ArtifactError(
            f"observation {row['observation_id']} has no artifact directory (its worker "
            "crashed or timed out before writing evidence); there is nothing to bundle")
    directory = resolve_artifact(root.path, relative)
    verify_manifest(directory)
    rows = rows_for_artifact(root, directory)
    if not any(r.observation_id == row["observation_id"] for r in rows):
        rows.append(observation_from_row(row))
    oid = str(row["observation_id"])
    folder = f"gero-{oid[:12]}"
    command = f"gero replay {out.name}   # or: tar xzf {out.name} && gero replay {folder}"
    extra = {
        OBSERVATIONS_JSON: json.dumps([row_to_json(r) for r in rows], indent=2,
                                      sort_keys=True).encode(),
        BUNDLE_JSON: json.dumps({
            "observation_id": oid, "case_id": row.get("case_id"), "check": row.get("check"),
            "result": row.get("result"), "reason": row.get("reason"),
            "source_artifact": relative, "created_at": datetime.now(UTC).isoformat(),
            "replay_command": command,
        }, indent=2, sort_keys=True).encode(),
    }
    manifest = json.loads((directory / MANIFEST).read_text())
    manifest["files"].update({name: sha256(data) for name, data in extra.items()})
    extra[MANIFEST] = json.dumps(manifest, indent=2, sort_keys=True).encode()
    count = 0

    def write(name: str) -> None:
        nonlocal count
        count = 0
        with tarfile.open(name, "w:gz") as tar:
            for member in [*sorted(manifest["files"]), MANIFEST]:
                if member in extra:
                    data = extra[member]
                    info = tarfile.TarInfo(f"{folder}/{member}")
                    info.size, info.mode = len(data), 0o644
                    info.mtime = int(datetime.now().timestamp())
                    tar.addfile(info, io.BytesIO(data))
                else:
                    tar.add(directory / member, arcname=f"{folder}/{member}", recursive=False)
                count += 1

    try:
        write_file(out, write)
    except OSError as e:
        raise ArtifactError(f"cannot write {out}: {e.strerror or e}") from e
    size = out.stat().st_size if out.is_file() else 0
    return BundleResult(out, oid, folder, count, len(rows), size, command)


MAX_MEMBERS = 10_000
"""Members a bundle may hold (a case directory has a few dozen files): counted as they are
listed, so an archive of 200,000 empty members is refused after 10,001, not extracted."""
NAME_SHOWN = 120
"""Characters of a member's name an error quotes."""


def _shown(name: str) -> str:
    """A member name as an error quotes it: repr'd (no raw escape sequence) and cut."""
    return repr(name) if len(name) <= NAME_SHOWN else repr(name[:NAME_SHOWN]) + "…"


def _safe_members(tar: tarfile.TarFile, archive: Path) -> list[tarfile.TarInfo]:
    members: list[tarfile.TarInfo] = []
    total = 0
    for member in tar:  # lazily: a member too large is refused before its data is read
        if len(members) >= MAX_MEMBERS:
            raise ArtifactError(f"{archive}: holds more than {MAX_MEMBERS:,} members; a "
                                "gero bundle holds one case directory; refusing to extract it")
        name = PurePosixPath(member.name)
        if name.is_absolute() or ".." in name.parts or not member.name.strip("/"):
            raise ArtifactError(f"{archive}: refusing member {_shown(member.name)} (path "
                                "escapes the extraction directory)")
        if not (member.isfile() or member.isdir()):
            raise ArtifactError(f"{archive}: refusing member {_shown(member.name)} (links "
                                "and special files are not allowed in a bundle)")
        if member.size > MAX_MEMBER_BYTES:
            raise ArtifactError(f"{archive}: member {_shown(member.name)} is too large "
                                f"({member.size} bytes)")
        total += member.size
        if total > MAX_EXPANDED_BYTES:
            raise ArtifactError(f"{archive}: expands to more than {MAX_EXPANDED_BYTES >> 20} "
                                "MiB; refusing to extract it")
        members.append(member)
    return members


def extract_bundle(archive: Path, target: Path) -> Path:
    """Extract a bundle safely into ``target``; return the case directory inside it."""
    try:
        with tarfile.open(archive, "r:*") as tar:
            members = _safe_members(tar, archive)
            for member in members:
                path = (target / member.name).resolve()
                if not path.is_relative_to(target.resolve()):
                    raise ArtifactError(f"{archive}: refusing member {_shown(member.name)}")
                if member.isdir():
                    path.mkdir(parents=True, exist_ok=True)
                    continue
                path.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                if source is None:
                    raise ArtifactError(f"{archive}: cannot read member {_shown(member.name)}")
                with source, open(path, "wb") as f:
                    shutil.copyfileobj(source, f)
    except (tarfile.TarError, OSError, EOFError) as e:
        raise ArtifactError(f"{archive}: not a readable .tar.gz bundle ({e})") from e
    manifests = sorted(p.parent for p in target.rglob(MANIFEST))
    if len(manifests) != 1:
        raise ArtifactError(f"{archive}: expected one case directory with {MANIFEST}, "
                            f"found {len(manifests)}")
    return manifests[0]


@contextmanager
def opened(path: Path) -> Iterator[Path]:
    """An artifact directory for ``path``: the directory itself, or a bundle extracted to a
    temporary directory (removed afterwards)."""
    if path.is_dir():
        yield path
        return
    if not path.is_file():
        raise ArtifactError(f"{path}: no such artifact directory or bundle")
    with tempfile.TemporaryDirectory(prefix="gero-bundle-") as tmp:
        yield extract_bundle(path, Path(tmp))

"""Outputs are written through what the user named, with the umask's mode."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from gero_cli import main
from gero_runner.errors import GeroError
from gero_runner.storage.locks import dir_mode, file_mode
from gero_runner.storage.store import atomic_write_bytes


@pytest.fixture()
def umask_022() -> object:
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_a_regular_file_is_replaced_whole_with_the_umask_mode(tmp_path: Path,
                                                              umask_022: object) -> None:
    target = tmp_path / "out.csv"
    target.write_text("old")
    atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644 == file_mode()
    assert dir_mode() == 0o755
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]  # no temporary left


def test_a_symlink_is_written_through_not_replaced(tmp_path: Path) -> None:
    real = tmp_path / "real.csv"
    real.write_text("old")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    atomic_write_bytes(link, b"new")
    assert link.is_symlink() and real.read_bytes() == b"new"


def test_a_fifo_is_written_through_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    atomic_write_bytes(fifo, b"through the pipe")
    reader.join(timeout=30)
    assert got == [b"through the pipe"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_name_over_255_bytes_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(GeroError, match="is 300 bytes long; file systems accept at most 255"):
        atomic_write_bytes(tmp_path / ("x" * 300), b"")


@pytest.mark.slow
def test_run_files_and_evidence_follow_the_umask(tmp_path: Path, umask_022: object) -> None:
    root = tmp_path / "data"  # the export goes beside it: never inside the data root
    assert main(["run", "--data-dir", str(root), "--ops", "Exp", "--dtypes", "float32",
                 "--repeats", "1", "--jobs", "1", "--no-contracts"]) == 0
    out = tmp_path / "export.csv"
    assert main(["export", "--data-dir", str(root), "-o", str(out)]) == 0
    modes = {p.relative_to(tmp_path).as_posix(): stat.S_IMODE(p.stat().st_mode)
             for p in tmp_path.rglob("*") if not p.name.startswith(".")}
    files = {k: m for k, m in modes.items() if (tmp_path / k).is_file()}
    dirs = {k: m for k, m in modes.items() if (tmp_path / k).is_dir()}
    assert files and set(files.values()) == {0o644}, files
    assert dirs and set(dirs.values()) == {0o755}, dirs

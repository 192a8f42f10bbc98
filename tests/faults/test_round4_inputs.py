"""User-model inputs, worker counts and ``--resume``'s refusal, under real ``gero`` processes
(issue 45 items 4, 14, 15, 16).

An ``--inputs`` / ``--calibration`` archive is size-checked from its headers before a byte
of it is allocated or inflated (a 236-byte file declaring 10^12 elements, a zip bomb, sizes
that disagree); one with no arrays is refused. ``--jobs 64`` on one small model case starts
no more workers than units can run. ``--resume`` names the flags that exist, and a terminal
(progress bars) does not make it refuse.
"""

from __future__ import annotations

import argparse
import ast
import io
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import time
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper
from shared_helpers import save
from test_fault_injection import ENV, WAIT_S

from gero_cli import build_parser
from gero_runner.request import run_options

REPO = Path(__file__).parents[2]
COUNTING_GERO = Path(__file__).with_name("counting_gero.py")
GERO = [str(Path(sys.executable).with_name("gero"))] \
    if Path(sys.executable).with_name("gero").is_file() else [sys.executable, "-m", "gero_cli"]
"""The ``gero`` command of the interpreter running the tests (the .venv's)."""
FAST = ["--repeats", "1", "--jobs", "1", "--backends", "onnxruntime"]
MiB = 1 << 20


@dataclass(frozen=True)
class Done:
    returncode: int
    stdout: str
    stderr: str
    max_rss: int
    """Peak resident memory of the process, in bytes (os.wait4)."""


def run_gero(*args: str, cwd: Path, command: list[str] | None = None,
             env: dict[str, str] | None = None) -> Done:
    """A real process of ``command`` (default: ``gero``), with its peak memory."""
    out, err = cwd / "stdout.txt", cwd / "stderr.txt"
    with out.open("w") as o, err.open("w") as e:
        proc = subprocess.Popen([*(command or GERO), *args], cwd=cwd, stdout=o, stderr=e,
                                env=env or ENV)
        deadline = time.monotonic() + WAIT_S
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Done(proc.returncode, out.read_text(), err.read_text(), usage.ru_maxrss * 1024)


def sentence(done: Done) -> str:
    """The one line of stderr (warnings aside), with no traceback."""
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = [line for line in done.stderr.strip().splitlines()
             if not line.startswith("gero: warning:")]
    assert len(lines) == 1, done.stderr
    return lines[0]


def relu_model(tmp: Path) -> str:
    return save(tmp / "relu.onnx", [helper.make_node("Relu", ["x"], ["y"])],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])


def npy_header(shape: tuple[int, ...], descr: str = "<f4") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def deflate_zip(path: Path, name: str, head: bytes, zeros_mib: int, declared: int,
                crc: int) -> None:
    """A zip of one deflated member ``name``: ``head`` then ``zeros_mib`` MiB of zeros
    (inflating that far, made in milliseconds: after a full flush the compressor restarts,
    so each MiB compresses to the same bytes), whose headers declare ``declared``
    uncompressed bytes and ``crc``, whatever the stream holds."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = c.compress(head) + c.flush(zlib.Z_FULL_FLUSH)
    piece = c.compress(bytes(MiB)) + c.flush(zlib.Z_FULL_FLUSH)
    data = first + piece * zeros_mib + c.flush(zlib.Z_FINISH)
    raw = name.encode()
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 8, 0, 0x21, crc, len(data),
                        declared, len(raw), 0) + raw
    central = struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 8, 0, 0x21, crc,
                          len(data), declared, len(raw), 0, 0, 0, 0, 0, 0) + raw
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 1, 1, len(central),
                      len(local) + len(data), 0)
    path.write_bytes(local + data + central + end)


def test_a_header_declaring_a_trillion_elements_is_refused_before_allocating(
        tmp_path: Path) -> None:
    model = relu_model(tmp_path)
    huge = tmp_path / "huge.npz"
    with zipfile.ZipFile(huge, "w") as z:
        z.writestr("x.npy", npy_header((10**6, 10**6)))
    assert huge.stat().st_size < 300  # the 236-byte file of the issue
    for flags in (["--inputs", str(huge)],
                  ["--variants", "int8-static", "--calibration", str(huge)]):
        done = run_gero("run", "--model", model, *flags, "--data-dir", str(tmp_path / "d"),
                        *FAST, cwd=tmp_path)
        assert done.returncode == 2, done.stderr[-3000:]
        line = sentence(done)
        assert f"{flags[-2]} {huge}: array 'x': shape [1000000, 1000000] of float32" in line
        assert "over the 1,024.0 MiB a tensor may take (--max-tensor-mb)" in line
        assert "MemoryError" not in done.stderr
    # The Python API raises it as a GeroError, not a MemoryError.
    script = ("import sys, gero\n"
              "try:\n"
              f"    gero.run(models=[{model!r}], inputs_file={str(huge)!r}, "
              f"data_dir={str(tmp_path / 'api')!r})\n"
              "except gero.GeroError as e:\n"
              "    print('GeroError:', e)\n")
    done = run_gero("-c", script, cwd=tmp_path, command=[sys.executable])
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.stdout.startswith("GeroError: --inputs") and "--max-tensor-mb" in done.stdout


@pytest.mark.slow
def test_a_zip_bomb_is_refused_from_its_declared_sizes_before_inflating(
        tmp_path: Path) -> None:
    model = relu_model(tmp_path)
    head = npy_header((256 * MiB,))  # 1 GiB of float32
    bomb = tmp_path / "bomb.npz"
    deflate_zip(bomb, "x.npy", head, 1024, len(head) + 1024 * MiB, crc=0)
    assert bomb.stat().st_size < 2 * MiB
    done = run_gero("run", "--model", model, "--inputs", str(bomb), "--max-tensor-mb", "64",
                    "--data-dir", str(tmp_path / "d"), *FAST, cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "array 'x' would take 1,024.0 MiB, over the 64.0 MiB a tensor may take " \
           "(--max-tensor-mb)" in sentence(done)
    assert done.max_rss < 768 * MiB, done.max_rss  # nothing of the 1 GiB was allocated
    # The npy header and the zip's declared size must agree: a header declaring 1 GiB in a
    # member declared 24 bytes long is refused before the 1 GiB is allocated.
    forged = tmp_path / "forged.npz"
    with zipfile.ZipFile(forged, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("x.npy", head + bytes(24))
    done = run_gero("run", "--model", model, "--inputs", str(forged), "--data-dir",
                    str(tmp_path / "d"), *FAST, cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "its header declares shape [268435456] of float32 (1073741824 bytes) but the " \
           "archive declares 24 bytes of data" in sentence(done)


@pytest.mark.slow
def test_a_member_inflating_past_its_declared_size_is_read_only_that_far(
        tmp_path: Path) -> None:
    model = relu_model(tmp_path)
    head = npy_header((2, 3))
    crc = zlib.crc32(head + bytes(24))
    # Headers that agree on a [2, 3] array; the stream goes on for 1 GiB of zeros.
    long = tmp_path / "long.npz"
    deflate_zip(long, "x.npy", head, 1024, len(head) + 24, crc)
    done = run_gero("run", "--model", model, "--inputs", str(long), "--data-dir",
                    str(tmp_path / "d"), *FAST, "--no-contracts", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.max_rss < 768 * MiB, done.max_rss
    # The same with the stream's CRC (not the declared bytes'): damaged, one sentence.
    deflate_zip(long, "x.npy", head, 1024, len(head) + 24, crc ^ 1)
    done = run_gero("run", "--model", model, "--inputs", str(long), "--data-dir",
                    str(tmp_path / "d"), *FAST, cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "array 'x': damaged (Bad CRC-32 for file 'x.npy')" in sentence(done)


def test_an_archive_with_no_arrays_is_one_sentence(tmp_path: Path) -> None:
    model = relu_model(tmp_path)
    empty = tmp_path / "empty.npz"
    np.savez(empty)
    done = run_gero("run", "--model", model, "--inputs", str(empty), "--data-dir",
                    str(tmp_path / "d"), *FAST, cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    assert sentence(done) == (f"gero: error: --inputs {empty}: holds no arrays; save one per "
                              "input, e.g. numpy.savez(FILE, x=array)")
    assert not (tmp_path / "d" / "runs").exists()


@pytest.mark.slow
def test_jobs_beyond_what_can_run_start_no_idle_workers(tmp_path: Path) -> None:
    """``--jobs 64`` on one small model case: a worker is started only for a part that is
    waiting (the pool's ``_Worker``s counted by tests/faults/counting_gero.py)."""
    model = relu_model(tmp_path)
    log = tmp_path / "workers.log"
    env = {**ENV, "GERO_TEST_WORKER_LOG": str(log)}
    done = run_gero("run", "--model", model, "--data-dir", str(tmp_path / "d"), "--repeats",
                    "1", "--jobs", "64", cwd=tmp_path, env=env,
                    command=[sys.executable, str(COUNTING_GERO)])
    assert done.returncode in (0, 1), done.stderr[-3000:]
    lines = log.read_text().split()
    workers = [x for x in lines if x.startswith("worker:")]
    units = [x for x in lines if x.startswith("unit:")]
    assert workers and len(set(workers)) == len(workers)
    # Never more workers than the units (paths, checks, the judge) the case was split into,
    # let alone 64; the first ones start in parallel.
    assert len(workers) <= len(units) < 64, (len(workers), len(units))
    assert len(workers) > 1
    assert "run " in done.stdout


def _run_flags() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {o for a in sub.choices["run"]._actions for o in a.option_strings}


def test_the_resume_refusal_names_flags_that_exist(tmp_path: Path) -> None:
    calibration = tmp_path / "c.npz"
    np.savez(calibration, x=np.ones((2, 3), np.float32))
    done = run_gero("run", "--resume", "r1", "--data-dir", str(tmp_path / "d"),
                    "--calibration", str(calibration), "--decision-axis", "y=1",
                    "--skip-path", "onnxruntime:all", cwd=tmp_path)
    assert done.returncode == 2
    line = sentence(done)
    named = re.findall(r"\((--[a-z-]+)\)", line)
    assert named == ["--calibration", "--decision-axis", "--skip-path"], line
    assert set(named) <= _run_flags()
    # The refusal and the parser read one table: every keyword's flag is a flag of
    # `gero run`, and every flag of `gero run` but --resume, --env (the interpreter of a
    # release for this process and its workers, not a run option) and the common ones is
    # a keyword's.
    flags = {o.flag for o in run_options().values() if o.flag is not None}
    expected = _run_flags() - {"-h", "--help", "-q", "--quiet", "--resume", "--env"}
    assert flags == expected, flags ^ expected


def test_resume_in_a_terminal_is_not_refused_for_its_progress_bars(tmp_path: Path) -> None:
    """On a terminal the command passes its progress callbacks to the library; ``--resume``
    took the paths' one for an option it would ignore ('activity (--activity)')."""
    controller, terminal = pty.openpty()
    proc = subprocess.Popen([*GERO, "run", "--resume", "nosuch", "--data-dir",
                             str(tmp_path / "d")], cwd=tmp_path, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=terminal, env=ENV)
    os.close(terminal)
    seen = b""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        ready, _, _ = select.select([controller], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the process closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    os.close(controller)
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=WAIT_S) == 2
    text = seen.decode(errors="replace")
    assert "would be ignored" not in text and "--activity" not in text, text
    assert "gero: error: no runs in" in text and "Traceback" not in text, text


def test_every_flag_a_message_names_exists() -> None:
    """Every ``--flag`` written in gero's source strings is an option of some command
    (CSS custom properties of the HTML report, dask's own ``--preload`` and the pip and uv
    options ``gero env add`` passes on aside)."""
    parser = build_parser()
    flags: set[str] = set()
    todo = [parser]
    while todo:
        p = todo.pop()
        for action in p._actions:
            flags.update(action.option_strings)
            if isinstance(action, argparse._SubParsersAction):
                todo += action.choices.values()
    not_ours = {"--accent", "--ink", "--line", "--muted", "--soft", "--preload",
                "--disable-pip-version-check", "--extra-index-url", "--find-links",
                "--index-strategy", "--index-url"}
    unknown: dict[str, set[str]] = {}
    for path in [*(REPO / "src").rglob("*.py"), *(REPO / "runner").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", node.value):
                    if flag not in flags and flag not in not_ours:
                        unknown.setdefault(flag, set()).add(str(path.relative_to(REPO)))
    assert not unknown, unknown

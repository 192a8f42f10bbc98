"""``gero.run`` from real scripts as users write them: two threads of one process into one
root, and a plain script without ``if __name__ == "__main__":``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_fault_injection import ENV, WAIT_S, gero

from gero_runner.storage.reader import open_run
from gero_runner.storage.store import DataRoot

pytestmark = pytest.mark.slow

TWO_THREADS = '''
import sys, threading
import gero

with open(sys.argv[2], "a") as f:
    f.write("executed\\n")  # once per execution of this script, wherever it happens
errors = []

def go(name, ops):
    try:
        run = gero.run(ops=ops, dtypes=["float32"], repeats=1, jobs=1, data_dir=sys.argv[1],
                       run_id=name)
        print(name, run.status)
    except BaseException as e:
        errors.append(repr(e))

threads = [threading.Thread(target=go, args=(name, ops))
           for name, ops in (("a", ["Exp", "Relu"]), ("b", ["Exp", "Sigmoid"]))]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("errors", errors)
'''


def _script(tmp_path: Path, text: str, guarded: bool) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "user_script.py"
    if guarded:
        body = "".join(f"    {line}\n" for line in text.strip().splitlines())
        text = f'if __name__ == "__main__":\n{body}'
    script.write_text(text)
    return subprocess.run([sys.executable, str(script), str(tmp_path / "data"),
                           str(tmp_path / "executions")], cwd=tmp_path, env=ENV, text=True,
                          capture_output=True, timeout=4 * WAIT_S)


def _stored(root: Path) -> tuple[list[str], dict[int, set[str]]]:
    ids: list[str] = []
    by_key: dict[int, set[str]] = {}
    for path in DataRoot(root).observation_files():
        table = pq.read_table(path, columns=["observation_id", "observation_key"])
        for oid, key in zip(table.column(0).to_pylist(), table.column(1).to_pylist(),
                            strict=True):
            ids.append(oid)
            by_key.setdefault(key, set()).add(oid)
    return ids, by_key


def _ops(root: Path, run_id: str) -> set[str]:
    with open_run(root, run_id) as run:
        return {r[0] for r in run.query("SELECT DISTINCT op_type FROM obs")}


def _check_two_runs(tmp_path: Path, done: subprocess.CompletedProcess[str]) -> None:
    root = tmp_path / "data"
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(done.stdout.split("\n")[:2]) == ["a complete", "b complete"], done.stdout
    assert "errors []" in done.stdout
    ids, by_key = _stored(root)
    assert len(ids) == len(set(ids)), "an observation stored twice"
    assert all(len(v) == 1 for v in by_key.values()), "one key handed to two observations"
    for _ in range(2):  # as the runs wrote them, then from the compacted store
        assert _ops(root, "a") == {"Exp", "Relu"}
        assert _ops(root, "b") == {"Exp", "Sigmoid"}
        gero("compact", "--data-dir", str(root), cwd=tmp_path)
    ids, _ = _stored(root)
    assert len(ids) == len(set(ids))


def test_two_threads_of_one_process_hold_the_root_lock_in_turn(tmp_path: Path) -> None:
    _check_two_runs(tmp_path, _script(tmp_path, TWO_THREADS, guarded=True))


def test_a_script_without_a_main_guard_runs_once(tmp_path: Path) -> None:
    """The workers (and their fork server) never import the caller's ``__main__``; the
    runs also come from threads."""
    done = _script(tmp_path, TWO_THREADS, guarded=False)
    assert (tmp_path / "executions").read_text() == "executed\n"
    _check_two_runs(tmp_path, done)


def test_wrong_types_are_one_sentence_naming_the_parameter(tmp_path: Path) -> None:
    script = tmp_path / "wrong_types.py"  # not types.py: it would shadow the stdlib module
    script.write_text(
        "import gero\n"
        "from gero_runner.errors import GeroError\n"
        "for kw in [dict(ops=5), dict(data_dir=123), dict(limit=1.5), dict(run_id=5),\n"
        "           dict(seed='abc'), dict(seed=2**80), dict(ops='Abs'), dict(models=5)]:\n"
        "    try:\n"
        "        gero.run(**{'data_dir': 'data', **kw})\n"
        "        print('accepted', kw)\n"
        "    except GeroError as e:\n"
        "        print(str(e).split(' ')[0])\n")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=ENV, text=True,
                          capture_output=True, timeout=WAIT_S)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stdout.split() == ["ops", "data_dir", "limit", "run_id", "seed", "seed",
                                   "ops", "models"]
    assert not (tmp_path / "data" / "runs").exists()

"""Every block the README and the documentation pages mark runnable runs, so the docs cannot
drift from the code: a page's runnable blocks run in order in one scratch directory (a
Python block with this interpreter, a shell block with bash, ``gero`` and ``python`` from
this environment first on PATH), and each must exit with the status its marker declares (a
shell block's is its last command's), print the text it expects, and print no traceback and
no ``gero: error`` it does not expect. The blocks are small by rule (a tiny model, a few cases)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from doc_blocks import ROOT, Block, blocks, pages

pytestmark = pytest.mark.slow

RUNNABLE = {page: [b for b in blocks(page) if b.runnable] for page in pages()}
PAGES = [page for page, found in RUNNABLE.items() if found]


def _environment(scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GERO_DATA")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(scratch)  # no user configuration, no cache outside the scratch folder
    env.setdefault("GERO_CACHE_DIR", str(scratch / "cache"))
    env["NO_COLOR"] = "1"
    return env


def run_block(block: Block, scratch: Path) -> subprocess.CompletedProcess[str]:
    if block.language == "python":
        command = [sys.executable, "-c", block.text]
    elif block.language in ("sh", "bash"):
        # As a script: the block's status is its last command's (a README block may run
        # `gero run` and then `gero findings`, both exiting 1 for "found something").
        command = ["bash", "-o", "pipefail", "-c", block.text]
    else:
        raise AssertionError(f"{block.where}: a runnable block is python or sh, "
                             f"not {block.language!r}")
    return subprocess.run(command, cwd=scratch, env=_environment(scratch), text=True,
                          capture_output=True, timeout=300, stdin=subprocess.DEVNULL)


def test_the_docs_mark_examples_runnable() -> None:
    """The README's model example and the how-to pages' examples are among them."""
    names = {str(page.relative_to(ROOT)) for page in PAGES}
    assert {"README.md", "docs/how-to/your-model.md", "docs/how-to/python.md"} <= names
    assert sum(len(RUNNABLE[page]) for page in PAGES) >= 8


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_runnable_blocks_run(page: Path, tmp_path: Path) -> None:
    for block in RUNNABLE[page]:
        done = run_block(block, tmp_path)
        output = done.stdout + done.stderr
        assert done.returncode in block.exit, (
            f"{block.where}: exited {done.returncode}, the page says {block.exit}:\n"
            f"{output[-3000:]}")
        assert block.expect in output, (
            f"{block.where}: the output lacks {block.expect!r}:\n{output[-3000:]}")
        assert "Traceback" not in output, f"{block.where}:\n{output[-3000:]}"
        if "gero: error" not in block.expect:
            assert "gero: error" not in output, f"{block.where}:\n{output[-3000:]}"


def test_a_failing_block_fails(tmp_path: Path) -> None:
    """The runner above reports what it should: a block's exit status and its output."""
    page = tmp_path / "page.md"
    page.write_text("<!-- runnable: exit=2 expect=\"gero: error\" -->\n```sh\n"
                    "gero run --model missing.onnx\n```\n")
    [block] = blocks(page)
    assert (block.runnable, block.exit, block.expect) == (True, (2,), "gero: error")
    done = run_block(block, tmp_path)
    assert done.returncode == 2 and "gero: error" in done.stderr

"""The documentation site builds in strict mode (a broken link, a missing page or anchor, a
docstring that does not resolve fails), its generated reference pages hold what the code
has, and its landing page and tutorial render in headless Chromium with a search index beside
them. Skipped, with the reason, where mkdocs (``pip install -e '.[docs]'``) or Chromium is not
installed: CI's second interpreter installs ``.[test]`` only."""

from __future__ import annotations

import argparse
import html
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from chromium import Browser, find_chromium
from doc_blocks import ROOT

from gero_cli import build_parser
from gero_runner.schema import OBSERVATION_COLUMNS

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(out)],
        cwd=ROOT, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, text=True,
        capture_output=True, timeout=300)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}{done.stderr}"
    return out


def _page(site: Path, uri: str) -> str:
    return html.unescape((site / uri / "index.html").read_text(encoding="utf-8"))


def test_the_search_index_holds_every_page(site: Path) -> None:
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    locations = {doc["location"].split("#")[0] for doc in index["docs"]}
    assert {"", "tutorial/", "reference/cli/", "reference/api/",
            "explanation/observations/"} <= locations
    tutorial = " ".join(d["text"] for d in index["docs"] if d["location"].startswith("tutorial/"))
    assert "gero bundle" in tutorial and "reproduced bit-exact" in tutorial


def test_the_command_reference_has_every_command_and_option(site: Path) -> None:
    page = _page(site, "reference/cli")
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = []
    for name, sub in action.choices.items():
        if f'id="gero-{name}"' not in page:
            missing.append(f"gero {name}")
        missing += [f"gero {name} {option}" for a in sub._actions
                    for option in a.option_strings if option not in page]
    assert not missing, f"reference/cli lacks {', '.join(missing)}"


def test_the_schema_page_has_every_column(site: Path) -> None:
    page = _page(site, "reference/schema")
    missing = [c.name for c in OBSERVATION_COLUMNS if f"<code>{c.name}</code>" not in page]
    assert not missing, f"reference/schema lacks {missing}"


def test_the_tolerance_page_reads_the_code(site: Path) -> None:
    page = _page(site, "reference/tolerances")
    # float32: the operator table's 1e-5 / 1e-6, and 1e-4 on a model's scale
    assert "<td>float32</td>\n<td>1e-5</td>\n<td>1e-6</td>\n<td>1e-4</td>" in page
    assert "<td>float16</td>\n<td>5e-3</td>\n<td>5e-4</td>" in page


def test_the_python_api_is_rendered_from_docstrings(site: Path) -> None:
    page = _page(site, "reference/api")
    for name in ("gero.api.run", "gero.api.open_run", "gero.api.Run",
                 "gero.testing.check_model"):
        assert f'id="{name}"' in page, name
    assert "Run a suite or models into the data root" in page


@pytest.mark.skipif(find_chromium() is None, reason="no chromium on PATH "
                    "(apt-get install chromium)")
def test_the_landing_page_and_the_tutorial_render(site: Path) -> None:
    with Browser(width=1280, height=900) as browser:
        for uri, title, pictures in (("index.html", "gero", 1),
                                     ("tutorial/index.html", "Tutorial", 9)):
            browser.open(site / uri)
            [heading] = browser.nodes("article h1")
            assert title in browser.text(heading)
            box = browser.box(heading)
            assert box is not None and box[2] > 0 and box[3] > 0
            # every screenshot drawn at its size: a missing file is a small broken icon
            images = browser.nodes("article img")
            assert len(images) >= pictures
            for image in images:
                drawn = browser.box(image)
                assert drawn is not None and drawn[3] > 100, browser.attribute(image, "src")
            assert browser.nodes("nav.md-nav--primary a.md-nav__link")  # the site's menu
    assert browser.requests == [], f"the pages fetched {browser.requests}"

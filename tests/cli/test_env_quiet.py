"""``gero -q env add`` (issue 42): the installer's progress lines are silenced with the rest
of the output; without -q they go to stderr and the result line to stdout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gero_cli import main
from gero_runner.backends import release_env

RELEASE = "onnxruntime==1.20.1"


@pytest.fixture
def fake_create(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An environment made without installing anything: the installer's one line of
    progress, then the record."""
    monkeypatch.setenv(release_env.DIR_ENV, str(tmp_path / "envs"))

    def create(name: str, python: Path | None = None,
               progress: Any = None) -> release_env.Env:
        if progress is not None:
            progress("Installed 2 packages in 7ms")
        return release_env.Env(release_env.parse(name), tmp_path / "python", "3.11.7",
                               tmp_path / "envs" / "made", False)

    monkeypatch.setattr(release_env, "create", create)


def test_quiet_env_add_prints_nothing(fake_create: None,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-q", "env", "add", RELEASE]) == 0
    out, err = capsys.readouterr()
    assert (out, err) == ("", "")


def test_env_add_shows_progress_and_the_environment(fake_create: None,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["env", "add", RELEASE]) == 0
    out, err = capsys.readouterr()
    assert "Installed 2 packages" in err
    assert out.startswith(f"{RELEASE}: made ")

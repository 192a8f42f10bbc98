"""Session-wide test settings."""

from __future__ import annotations

import os
import tempfile

import pytest
from shared_helpers import FORKING


def pytest_configure(config: pytest.Config) -> None:
    # OpenVINO's compiled-graph cache (backends.openvino) goes to a folder of this session,
    # not the user's ~/.cache; worker processes inherit the setting.
    if "GERO_CACHE_DIR" not in os.environ:
        os.environ["GERO_CACHE_DIR"] = tempfile.mkdtemp(prefix="gero-test-cache-")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests whose workers are forked from this process run first: once any test has loaded
    OpenVINO here, children start from a fork server (a fork of a process that ran it hangs),
    and a fork server's workers cannot see the test's substitute evaluator."""
    for item in items:
        if "fork_workers" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.filterwarnings(FORKING))
    items.sort(key=lambda item: 0 if "fork_workers" in getattr(item, "fixturenames", ()) else 1)


@pytest.fixture
def fork_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers forked from this process, for a test whose workers must see a substitute it
    made here (a fake evaluator); others start from a fork server (process.start_method)."""
    from gero_runner.process import start_method

    monkeypatch.setattr(start_method, "START_METHOD", "fork")


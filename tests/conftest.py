"""Session-wide test settings."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from shared_helpers import FORKING


def pytest_configure(config: pytest.Config) -> None:
    # OpenVINO's compiled-graph cache (backends.openvino) goes to a folder of this session,
    # not the user's ~/.cache; worker processes inherit the setting.
    if "GERO_CACHE_DIR" not in os.environ:
        os.environ["GERO_CACHE_DIR"] = tempfile.mkdtemp(prefix="gero-test-cache-")


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Groups for pytest-xdist (``--dist loadgroup``) and the one rerun.

    Tests whose workers are forked from this process form one group that runs first: once
    any test has loaded OpenVINO in a process, its children start from a fork server (a
    fork of a process that ran it hangs), and a fork server's workers cannot see the
    test's substitute evaluator. Every other test runs with the rest of its module (module
    fixtures are computed once, and a module's tests keep their order).

    Only the tests that fork from the test process (``fork_workers`` or the ``forks``
    marker) are run once more after a failure: such a child now and then dies with SIGSEGV
    in its first case (dozens of DuckDB/Textual native threads here). Any other
    intermittent failure is red.

    Every test under ``tests/faults`` is ``slow`` (real processes killed, full and
    read-only disks): ``pytest -m "not slow"``, the fast profile CI runs first, leaves
    them out, with every other test that takes more than about a second.
    """
    faults = Path(__file__).parent / "faults"
    for item in items:
        if faults in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.slow)
        fixtures = getattr(item, "fixturenames", ())
        if "fork_workers" in fixtures or item.get_closest_marker("forks"):
            item.add_marker(pytest.mark.filterwarnings(FORKING))
            item.add_marker(pytest.mark.flaky(reruns=1))
        group = ("fork-workers" if "fork_workers" in fixtures
                 else item.nodeid.split("::", 1)[0])
        item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: 0 if "fork_workers" in getattr(item, "fixturenames", ()) else 1)


@pytest.fixture
def fork_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers forked from this process, for a test whose workers must see a substitute it
    made here (a fake evaluator); others start from a fork server (process.start_method)."""
    from gero_runner.process import start_method

    monkeypatch.setattr(start_method, "START_METHOD", "fork")
    # A test xdist ran earlier in this process may have loaded OpenVINO (its group is not
    # always first): these tests' children run no OpenVINO (their runs select ONNX Runtime
    # or a fake evaluator), so forking them stays safe.
    monkeypatch.setattr(start_method, "_NO_FORK_ONCE_LOADED", set())


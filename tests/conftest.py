"""Session-wide test settings."""

from __future__ import annotations

import os
import tempfile

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # OpenVINO's compiled-graph cache (backends.openvino) goes to a folder of this session,
    # not the user's ~/.cache; worker processes inherit the setting.
    if "GERO_CACHE_DIR" not in os.environ:
        os.environ["GERO_CACHE_DIR"] = tempfile.mkdtemp(prefix="gero-test-cache-")

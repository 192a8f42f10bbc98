"""The environment of a second ONNX Runtime release for the tests of issue 42 (releases side
by side). ``.ci/run`` makes it with ``gero env add`` before the tests; no test installs
anything. Without it they skip, unless ``$GERO_REQUIRE_RELEASE_ENVS`` is set (CI sets it):
then its absence fails them."""

from __future__ import annotations

import os

import pytest

from gero_runner.backends import release_env

OLD = "onnxruntime==1.20.1"
REQUIRE = "GERO_REQUIRE_RELEASE_ENVS"


def old_release() -> str:
    """The release's name once its environment is found (else a skip, or in CI a failure)."""
    if release_env.python_for(OLD) is None:
        why = (f"no environment of {OLD} under {release_env.root()}: "
               f"`gero env add {OLD}` makes it (.ci/run does, before the tests)")
        if os.environ.get(REQUIRE):
            pytest.fail(f"{REQUIRE} is set and {why}")
        pytest.skip(why)
    return OLD

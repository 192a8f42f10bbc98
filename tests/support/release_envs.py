"""The environments of a second ONNX Runtime release and a second tract release for the
tests of issue 42 (releases side by side). ``.ci/run`` makes them with ``gero env add``
before the tests; no test installs anything. Without one its tests skip, unless
``$GERO_REQUIRE_RELEASE_ENVS`` is set (CI sets it): then its absence fails them."""

from __future__ import annotations

import os

import pytest

from gero_runner.backends import release_env

OLD = "onnxruntime==1.20.1"
OLD_TRACT = "tract==0.21.19"
"""A tract release beside the installed one (0.22: both keep the unoptimised path)."""
NEW_TRACT = "tract==0.23.9"
"""A tract release without the unoptimised path, whose float16 Sigmoid is closer to float64
than 0.22's."""
REQUIRE = "GERO_REQUIRE_RELEASE_ENVS"


def old_release(name: str = OLD) -> str:
    """The release's name once its environment is found (else a skip, or in CI a failure)."""
    if release_env.python_for(name) is None:
        why = (f"no environment of {name} under {release_env.root()}: "
               f"`gero env add {name}` makes it (.ci/run does, before the tests)")
        if os.environ.get(REQUIRE):
            pytest.fail(f"{REQUIRE} is set and {why}")
        pytest.skip(why)
    return name

"""Random operators keep their observation ids across reruns (so dedup holds for them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gero_runner.cases.onnx_backend import RANDOM_SEED, collect, seeded
from gero_runner.errors import error_text
from gero_runner.run import RunRequest, execute


def test_unseeded_random_nodes_get_a_seed_and_seeded_ones_keep_theirs() -> None:
    cases = {tc.name: tc for tc in collect() if tc.name.startswith("test_bernoulli")}
    plain = seeded(cases["test_bernoulli"].model)
    (seed,) = [a.f for a in plain.graph.node[0].attribute if a.name == "seed"]
    assert seed == RANDOM_SEED
    assert seeded(cases["test_bernoulli_seed"].model) is cases["test_bernoulli_seed"].model


@pytest.mark.slow
def test_a_rerun_of_random_cases_finds_the_same_observations(tmp_path: Path) -> None:
    request = RunRequest(suite="onnx-backend", data_root=tmp_path,
                         ops=["Bernoulli", "RandomUniformLike", "RandomNormalLike"],
                         repeats=1, jobs=1)
    first = execute(request)
    second = execute(request)
    assert first.new_observation_count == first.observation_count > 0
    assert second.observation_count == first.observation_count
    assert second.new_observation_count == 0


def test_memory_addresses_do_not_reach_a_reason() -> None:
    text = error_text(RuntimeError("node <Func_Bernoulli0x7ffe60733d00X_random> failed"))
    assert "0x7ffe" not in text and "0x…" in text



def test_openvino_node_numbers_do_not_reach_a_reason() -> None:
    """OpenVINO numbers the nodes it builds per process: the same model fails with other
    numbers in another worker (a local pool's, a Dask worker's), so they are left out."""
    def failure(n: int) -> str:
        return error_text(RuntimeError(
            f"While validating node 'opset1::VariadicSplit VariadicSplit_{n} "
            f"(opset1::Parameter Parameter_{n + 1}[0]:i64[5], opset1::Constant "
            f"Constant_{n + 2}[0]:i64[]) -> (dynamic[...])' with friendly_name "
            f"'VariadicSplit_{n}': ONNX node 'test_split_2_axis'"))

    assert failure(93606) == failure(7)
    assert "Parameter_…[0]" in failure(7) and "friendly_name 'VariadicSplit_…'" in failure(7)
    assert "test_split_2_axis" in failure(7)  # the model's own names are kept

"""The localization's sentence, on hand-made figures: an error that grows after its origin
is 'magnified' to the final figure; one that less of reaches the output is 'shrunk' (magika's
LayerNorm sum: 6.3e-7 at the origin, 5.4e-8 at the softmax output)."""

from __future__ import annotations

from gero_runner.evidence.localization import Localization, NodeFinding, TensorFigure
from gero_runner.evidence.localize import summary


def _tensor(name: str, position: int, error: float) -> TensorFigure:
    return TensorFigure(name, position, name, "Op", error, 0.0, 1e-7, True)


def _node(name: str, tensor: str, inputs: float, local: float, gain: float,
          role: str = "") -> NodeFinding:
    return NodeFinding(name, "Sum" if name == "sum" else "Mul", tensor, [name], {"x": inputs},
                       inputs, local, local, 1e-7, gain, share=0.5, role=role)


def _localization(final: float, role: str = "amplifier", origins: bool = True,
                  unaccounted: tuple[str, ...] = ()) -> Localization:
    tensors = [_tensor("s", 0, 6.3e-7), _tensor("m", 1, 2e-6), _tensor("y", 2, final)]
    return Localization("id", "case", "model:fp32", "y", "ort", "float64", "", "", final,
                        1e-7, 3, 3, [], tensors,
                        origins=[_node("sum", "s", 9e-8, 6.3e-7, 7.0)] if origins else [],
                        amplifiers=[_node("mul", "m", 6.3e-7, 2e-6, 3.2, role)],
                        instrumented={}, summary="", unaccounted=list(unaccounted))


def test_an_error_that_grows_to_the_output_is_magnified() -> None:
    text = summary(_localization(final=4e-5))
    assert "Mul after it magnifies it to 4e-05" in text


def test_an_error_less_of_which_reaches_the_output_is_shrunk() -> None:
    text = summary(_localization(final=5.4e-8))
    assert "shrink it to 5.4e-08 at the output" in text and "magnif" not in text


def test_a_node_whose_own_run_shows_no_gain_only_carries() -> None:
    """End to end the Mul's output is 3.2 times its input's difference, but its own run (the
    reference's Mul fed the path's inputs) made no more of it: it is no amplifier."""
    text = summary(_localization(final=4e-5, role="carrier"))
    assert "magnif" not in text and "the nodes after it carry it to 4e-05" in text


def test_builds_up_only_where_the_nodes_account_for_the_output() -> None:
    accounted = summary(_localization(final=4e-5, origins=False))
    assert "accounts for its output's: the error builds up from many small ones" in accounted
    unexplained = summary(_localization(final=4e-5, origins=False, unaccounted=("m",)))
    assert "builds up" not in unexplained and "not localized" in unexplained
    assert "does not account for theirs (m)" in unexplained

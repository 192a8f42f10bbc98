"""``gero.run`` takes the keywords ``RunKeywords`` declares: a misspelt one is one sentence
listing the options (not a TypeError), and ``resume`` refuses every option of the run's
own that is given, whatever its value (the stored run's may differ)."""

from __future__ import annotations

from pathlib import Path

import pytest

import gero


def test_an_unknown_keyword_is_one_sentence_listing_the_options(tmp_path: Path) -> None:
    with pytest.raises(gero.GeroError) as error:
        gero.run(data_dir=tmp_path, sead=3)  # type: ignore[call-arg]
    assert str(error.value).startswith("unknown option 'sead'; the options are suite, ")
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(("keywords", "named"), [
    ({"contracts": True}, "contracts (--no-contracts)"),
    ({"seed": 0}, "seed (--seed)"),
    ({"backends": None}, "backends (--backends)"),
    ({"ops": ["Exp"], "decision_axes": {"y": 1}}, "ops (--ops), decision_axes "
                                                  "(--decision-axis) would be ignored: "
                                                  "drop them"),
])
def test_resume_refuses_an_option_given_even_at_its_default(
        tmp_path: Path, keywords: dict[str, object], named: str) -> None:
    with pytest.raises(gero.GeroError) as error:
        gero.run(data_dir=tmp_path, resume="r1", **keywords)  # type: ignore[arg-type]
    assert f"resume finishes run r1 with the options it was started with; {named}" \
        in str(error.value)


def test_resume_takes_where_and_how_the_run_executes(tmp_path: Path) -> None:
    # jobs, executor and the record's command line apply to the resumed run: not refused,
    # the run is looked for (and there is none)
    with pytest.raises(gero.GeroError, match="no runs in"):
        gero.run(data_dir=tmp_path, resume="r1", jobs=1, executor="local",
                 command_line="gero run --resume r1")

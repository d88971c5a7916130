"""Every check of an option value or combination (`hf_attn.options.checks`): refused before any work, in one line that
names the options."""

from __future__ import annotations

import re

import pytest

from hf_attn.options.reading import resolve_options


@pytest.mark.parametrize(
    ("given", "named"),
    [({"label_column": "text"}, "--text_column and --label_column"),
     ({"text_column": "review", "text_pair_column": "review"}, "--text_column and --text_pair_column"),
     ({"text_pair_column": "b", "label_column": "b"}, "--text_pair_column and --label_column")],
)  # fmt: skip
def test_two_column_options_naming_one_column_are_refused_naming_both(tmp_path, given, named):
    """The text, pair and label options must name different columns: refused before any work, the line naming both
    options and the column; different columns resolve."""
    with pytest.raises(ValueError, match=named) as refused:
        resolve_options({"arch": "han", "output_dir": str(tmp_path), **given})
    assert repr(next(iter(given.values()))) in str(refused.value)
    options, _ = resolve_options({"arch": "han", "output_dir": str(tmp_path), "label_column": "stars"})
    assert options.label_column == "stars"


def test_an_output_dir_that_is_a_file_is_refused_in_one_line(tmp_path):
    """`--output_dir` naming a regular file is refused before any work, naming it (not "[Errno 17] File exists")."""
    taken = tmp_path / "model.safetensors"
    taken.write_bytes(b"weights")
    with pytest.raises(ValueError, match=r"--output_dir .*model\.safetensors is a file, not a folder"):
        resolve_options({"arch": "han", "output_dir": str(taken)})
    assert taken.read_bytes() == b"weights"  # untouched


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({"push_to_hub": True}, "--push_to_hub needs --hub_model_id USER/REPO."),
        ({"freeze_embeddings": True}, "--freeze_embeddings needs --word_vectors"),
        ({"recipe": "stcka-snippets", "word_vectors": "none", "freeze_embeddings": True}, "needs --word_vectors"),
    ],
)
def test_option_combinations_are_refused_before_any_work(tmp_path, given, named):
    with pytest.raises(ValueError, match=re.escape(named)):
        resolve_options({"output_dir": str(tmp_path / "run"), **given})
    assert not (tmp_path / "run").exists()


def test_a_run_in_two_stages_refuses_a_stream_and_a_checkpoint_path():
    from hf_attn.options.checks import check_staged_run, trains_in_stages
    from hf_attn.registry.table import get_architecture

    elmo, lin = get_architecture("elmo"), get_architecture("lin_self_attentive")
    classifier = next(head for head in elmo.heads if head.model_class.__name__ != elmo.pretraining_head)
    language_model = next(head for head in elmo.heads if head.model_class.__name__ == elmo.pretraining_head)
    assert trains_in_stages(elmo, classifier) and not trains_in_stages(elmo, language_model)
    with pytest.raises(ValueError, match=r"^--streaming: ELMo .* trains in two stages"):
        check_staged_run(elmo, classifier, True, None)
    with pytest.raises(ValueError, match=r"each with its own checkpoints .*not a checkpoint path"):
        check_staged_run(elmo, classifier, False, "run/checkpoint-4")
    check_staged_run(elmo, classifier, False, True)  # resuming each stage from its own last checkpoint
    check_staged_run(elmo, language_model, True, "run/checkpoint-4")  # one stage: both are fine
    check_staged_run(lin, lin.heads[0], True, "run/checkpoint-4")

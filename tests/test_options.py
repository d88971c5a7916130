"""The options of `hf-attn train` (hf_attn.options): argv is parsed once, the recipe read once, and a value the user
typed is never replaced by a recipe's or the noam schedule's default, even when it equals the dataclass default."""

from __future__ import annotations

import re

import pytest
from transformers import HfArgumentParser

import hf_attn.options as options_module
from hf_attn.models.vaswani_transformer.schedules_vaswani_transformer import noam_arguments
from hf_attn.options import HfAttnArguments, parse_arguments, resolve_options
from hf_attn.recipes import load_recipe
from hf_attn.training_arguments import HfAttnTrainingArguments


@pytest.fixture
def counted(monkeypatch):
    """How often argv is parsed and a recipe read (the real functions, counted)."""
    counts = {"parse": 0, "recipe": 0}
    parse, read = HfArgumentParser.parse_args, options_module.load_recipe

    def counting_parse(self, *args, **kwargs):
        counts["parse"] += 1
        return parse(self, *args, **kwargs)

    def counting_read(name):
        counts["recipe"] += 1
        return read(name)

    monkeypatch.setattr(HfArgumentParser, "parse_args", counting_parse)
    monkeypatch.setattr(options_module, "load_recipe", counting_read)
    return counts


def test_argv_is_parsed_once_and_the_recipe_read_once(counted, tmp_path):
    options, args = parse_arguments(["--recipe", "lin-yelp", "--output_dir", str(tmp_path)])
    assert counted == {"parse": 1, "recipe": 1}
    recipe = load_recipe("lin-yelp")
    assert options.loaded_recipe == recipe  # kept for the run: not read again
    assert args.learning_rate == recipe.arguments["learning_rate"] and options.dataset == recipe.arguments["dataset"]


def test_a_typed_value_equal_to_the_default_is_not_replaced_by_the_recipe(tmp_path):
    """lin-yelp sets learning_rate 0.06; `--learning_rate 1e-3` (hf_attn's own default) is what the user asked for."""
    default = HfAttnTrainingArguments.learning_rate
    _, args = parse_arguments(["--recipe", "lin-yelp", "--learning_rate", str(default), "--output_dir", str(tmp_path)])
    assert args.learning_rate == default
    _, args = parse_arguments(["--recipe", "lin-yelp", "--optim", "adamw_torch", "--output_dir", str(tmp_path)])
    assert args.learning_rate == 0.06 and str(args.optim.value) == "adamw_torch"  # the rest of the recipe stays


def test_the_noam_schedule_never_replaces_a_typed_value(tmp_path):
    common = ["--arch", "vaswani_transformer", "--schedule", "noam", "--output_dir", str(tmp_path)]
    _, args = parse_arguments([*common, "--config", "d_model=64", "--warmup_steps", "400"])
    noam = noam_arguments(64, 400)
    assert args.learning_rate == pytest.approx(noam["learning_rate"]) and args.adam_beta2 == 0.98
    _, args = parse_arguments([*common, "--learning_rate", "0.001", "--adam_beta2", "0.999"])
    assert args.learning_rate == 0.001 and args.adam_beta2 == 0.999


def test_keywords_and_argv_resolve_alike(tmp_path):
    from_argv = parse_arguments(["--arch", "han", "--epochs", "4", "--config", "embedding_size=16", "--output_dir",
                                 str(tmp_path)])  # fmt: skip
    keywords = {"arch": "han", "epochs": 4, "config": ["embedding_size=16"], "output_dir": str(tmp_path)}
    from_keywords = resolve_options(options_module.keyword_options(keywords))
    assert from_argv[0] == from_keywords[0] and isinstance(from_keywords[0], HfAttnArguments)
    assert from_argv[1].num_train_epochs == from_keywords[1].num_train_epochs == 4
    with pytest.raises(TypeError, match="epoch"):
        resolve_options({"epoch": 4})


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
    from hf_attn.options import check_staged_run, trains_in_stages
    from hf_attn.registry import get_architecture

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

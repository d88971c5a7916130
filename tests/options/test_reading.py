"""The options of `hf-attn train` (hf_attn.options.reading): argv is parsed once, the recipe read once, and a value
the user typed is never replaced by a recipe's or the noam schedule's default, even when it equals the dataclass
default."""

from __future__ import annotations

import pytest
from transformers import HfArgumentParser

import hf_attn.options.reading as options_module
from hf_attn.models.vaswani_transformer.schedules_vaswani_transformer import noam_arguments
from hf_attn.options.reading import HfAttnArguments, parse_arguments, resolve_options
from hf_attn.options.training_arguments import HfAttnTrainingArguments
from hf_attn.recipes import load_recipe


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


def test_num_beams_is_transformers_generation_num_beams_and_a_typed_one_is_kept(tmp_path):
    """`--num_beams` sets `generation_num_beams`, the beams a generating shape scores the held-out split with;
    transformers' own flag, typed, is what the shape uses (not replaced by its default of 4); both typed with two
    numbers is refused."""
    from types import SimpleNamespace

    from transformers import GenerationConfig

    from hf_attn.tasks.heads import TASK_SHAPES

    common = ["--arch", "vaswani_transformer", "--output_dir", str(tmp_path)]
    seq2seq, held_out = TASK_SHAPES["seq2seq"], {"labels": [[5, 6, 7]]}
    for typed, beams in ([], 4), (["--num_beams", "2"], 2), (["--generation_num_beams", "8"], 8):
        _, args = parse_arguments([*common, *typed])
        model = SimpleNamespace(generation_config=GenerationConfig())
        seq2seq.prepare(model, args, held_out)
        assert args.generation_num_beams == model.generation_config.num_beams == beams, typed
        assert args.generation_max_length == model.generation_config.max_length == 3 + 10
    assert parse_arguments([*common, "--num_beams", "3", "--generation_num_beams", "3"])[1].generation_num_beams == 3
    with pytest.raises(ValueError, match="--num_beams 2 and --generation_num_beams 8 both set"):
        parse_arguments([*common, "--num_beams", "2", "--generation_num_beams", "8"])

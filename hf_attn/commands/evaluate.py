"""`hf-attn evaluate MODEL --dataset D`: a trained model folder (or Hub id) scored on a dataset, as JSON metrics.

It finds the model's head from its config (`architectures`), and the task shape from the head, so it takes the data
options of `hf-attn train` (`--dataset`, the columns, `--eval_split`) and scores exactly what training scored.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..options.arguments import EPISODE_OPTIONS, evaluation_parser

if TYPE_CHECKING:  # the scoring's own imports wait for it: `hf-attn evaluate --help` loads no torch
    from transformers import PreTrainedConfig

    from ..options.arguments import HfAttnArguments
    from ..registry.row import ArchitectureArguments, Head

__all__ = ["EPISODE_OPTIONS", "episode_sizes", "evaluate", "main"]


def _check_evaluation_options(head: Head, options: HfAttnArguments) -> None:
    """Refuses an option the saved head does not read: beams for a head that does not generate, a second text or a
    target column for a head of one text."""
    from ..tasks.heads import shape_of

    shape, name = shape_of(head), head.model_class.__name__
    if (options.num_beams or 1) > 1 and not shape.generates(head):  # one beam is the greedy search any head does
        raise ValueError(f"--num_beams {options.num_beams}: {name} generates nothing to search with beams.")
    for option, column in (
        ("--text_pair_column", options.text_pair_column),
        ("--target_column", options.target_column),
    ):
        if column is not None and "pair_column" not in shape.layout.needs:
            raise ValueError(f"{option} {column}: {name} reads one text, with no {shape.layout.pair_is} beside it.")


def episode_sizes(head: Head, config: PreTrainedConfig, given: dict[str, int | None]) -> dict[str, int]:
    """The config fields of the held-out episodes that `given` (`--n_way`, `--k_shot`, `--n_query`) changes. Refused
    in one line: for a head that reads no episodes, a size below its minimum, and a K other than the trained one for
    a model whose attention is tied to its K (`supports_ragged_shots = False`: Proto-HATT's feature attention is a
    convolution spanning exactly the K shots)."""
    given = {option: value for option, value in given.items() if value is not None}
    if not given:
        return {}
    from ..tasks.heads import shape_of

    name = head.model_class.__name__
    if not shape_of(head).episodic:
        typed = " ".join(f"--{option}" for option in given)
        raise ValueError(f"{typed}: {name} is not a few-shot model (it reads no episodes).")
    for option, smallest in (("n_way", 2), ("k_shot", 1), ("n_query", 1)):
        if option in given and given[option] < smallest:
            raise ValueError(f"--{option} {given[option]}: give {smallest} or more.")
    shots = given.get("k_shot", config.num_shots)
    if shots != config.num_shots and not head.model_class.supports_ragged_shots:
        raise ValueError(
            f"--k_shot {shots}: {name}'s attention is tied to the K = {config.num_shots} shots it was trained with "
            f"(its convolutions span exactly K); evaluate with --k_shot {config.num_shots}, or train with K = {shots}."
        )
    return {EPISODE_OPTIONS[option]: value for option, value in given.items()}


def evaluate(
    model_path: str,
    options: HfAttnArguments,
    batch_size: int = 64,
    output_file: str | None = None,
    architecture_arguments: ArchitectureArguments | None = None,
    episodes: dict[str, int | None] | None = None,
) -> dict[str, float]:
    """Scores the model on `options.dataset` exactly as training scored its held-out split: the shape's encoding,
    its `Trainer` (`TaskShape.trainer`: the episodes of a few-shot model, the level-by-level beam of a label tree,
    generation for a generating head) and its metrics; writes them as JSON to `output_file`.

    What the run set that changes what the model reads is the run's unless given: `--max_length` and the columns
    its tokenizer reads (`architecture_arguments`, the model's architecture's own options: STCKA's
    `--concept_column`). `episodes`: a few-shot model's held-out N, K and Q (`--n_way`, `--k_shot`, `--n_query`;
    `episode_sizes`), else the trained ones."""
    from transformers import PrinterCallback

    from ..data.request import DataRequest
    from ..options.training_arguments import HfAttnTrainingArguments
    from ..tasks import encode_split
    from ..tasks.heads import load_trained, trained_head
    from ..tasks.scored import evaluation_columns, run_options, scored_data, scored_rows, training_seed

    if options.dataset is None:
        raise ValueError("hf-attn evaluate needs --dataset (a file, a folder or a Hub id).")
    config, head = trained_head(model_path)  # the options against the saved head, before its weights load
    _check_evaluation_options(head, options)
    sizes = episode_sizes(head, config, episodes or {})
    reused = run_options(model_path)  # the run's, where not given
    columns = evaluation_columns(architecture_arguments, reused)
    max_length = options.max_length if options.max_length is not None else reused.get("max_length")
    model, tokenizer, head, shape = load_trained(model_path, head=head)
    for field, value in sizes.items():
        setattr(model.config, field, value)
    request = DataRequest.of(options, columns)
    rows = scored_rows(request)
    data = scored_data(shape, rows, request, model.config, options.episode_settings())
    encoded, _ = encode_split(data.eval, shape.encoder(data, tokenizer, model.config, head, max_length))
    generates = shape.generates(head)
    with tempfile.TemporaryDirectory() as scratch:
        args = HfAttnTrainingArguments(
            output_dir=scratch,
            per_device_eval_batch_size=batch_size,
            report_to="none",
            generation_num_beams=(options.num_beams or model.generation_config.num_beams) if generates else None,
            disable_tqdm=True,
            seed=training_seed(model_path),
        )
        shape.ready(model, head, args, encoded)  # as training readies it: generation where the head generates
        trainer = shape.trainer(args, model, head, tokenizer, data, None, encoded, callbacks=())
        # Without progress bars the Trainer prints its log dict; the command's output is the metrics' JSON alone.
        trainer.remove_callback(PrinterCallback)
        metrics = shape.evaluate(trainer)
    metrics["examples"] = len(encoded)
    if shape.episodic:  # the sizes of the episodes scored: the trained ones, or those asked for
        metrics.update({option: getattr(model.config, field) for option, field in EPISODE_OPTIONS.items()})
    if output_file:
        Path(output_file).write_text(json.dumps(metrics, indent=2))
    return metrics


def main(argv: list[str]) -> None:
    """`hf-attn evaluate`: the options read, the model scored, its metrics printed as JSON."""
    parser = evaluation_parser("hf-attn evaluate")
    parser.add_argument("--batch_size", "--batch-size", type=int, default=64, help="evaluation batch size")
    parser.add_argument("--output_file", "--output-file", help="write the metrics here as JSON")
    sizes = {
        "n_way": "N, the classes",
        "k_shot": "K, the support texts of each class",
        "n_query": "the queries of each class",
    }
    for option in EPISODE_OPTIONS:
        text = f"a few-shot model's held-out episodes: {sizes[option]} (default: the trained one)"
        parser.add_argument(f"--{option}", f"--{option.replace('_', '-')}", type=int, help=text)
    options, *own, rest = parser.parse_args_into_dataclasses(argv)
    if not options.dataset:  # an option first, before the model is looked for
        raise ValueError("hf-attn evaluate needs --dataset (a file, a folder or a Hub id).")
    from ..tasks.scored import own_architecture_arguments  # after `--help`, which loads no torch

    metrics = evaluate(
        rest.model,
        options,
        batch_size=rest.batch_size,
        output_file=rest.output_file,
        architecture_arguments=own_architecture_arguments(rest.model, own),
        episodes={option: getattr(rest, option) for option in EPISODE_OPTIONS},
    )
    print(json.dumps({key: round(value, 4) for key, value in metrics.items()}, indent=2))

"""Train any registered architecture with `transformers.Trainer`: on your data or on a synthetic task.

One pipeline for every task. What differs between a classifier, a multi-label generator, a translator, a language
model and a tagger lives in its task shape (`hf_attn.tasks`); an architecture with a stage of its own before
the task (ELMo's biLM) says so in its registry row (`Architecture.pretraining_head`). The options are one dataclass
of hf_attn's (`HfAttnArguments`: architecture, data, vocabulary, word vectors, recipe) plus transformers'
`TrainingArguments` (here `HfAttnTrainingArguments`, with hf_attn's defaults), read once by `hf_attn.options.reading`,
so every Trainer flag works as in transformers' own examples (ARCH: a name `hf-attn list` prints; RECIPE: one of
`hf-attn recipes`):

    hf-attn train --output_dir runs/lin --config hidden_size=32 attention_hops=4
    hf-attn train --arch ARCH --dataset reviews.csv --label_column stars --word_vectors glove.6B.100d.txt --bf16
    hf-attn train --recipe RECIPE --output_dir runs/RECIPE
    accelerate launch --multi_gpu --num_processes 2 -m hf_attn.commands.train --output_dir runs/lin

Options are spelled with `_` or `-` (`--output-dir` too). Every process loads the same data and (for a vocabulary
trained here) the main process builds the tokenizer the others load; the Trainer shards the batches.

The command's path, one step a room: the options read and checked (`hf_attn.options`), the run prepared (the task
data, the head, the vocabulary, the config, the encoded splits: `hf_attn.training.preparation`), fitted (the model,
the `Trainer`, the metrics: `hf_attn.training.fitting`), and the folder saved with its card (`hf_attn.cards`) and
pushed (`hf_attn.hub`). `benchmarks/call_walk.py` traces it.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transformers import PreTrainedModel, PreTrainedTokenizerBase, Trainer, TrainerCallback

from ..cards import save_trained
from ..hub import push_model_dir
from ..options.checks import check_output_folder
from ..options.reading import (
    DATACLASSES,
    HfAttnArguments,
    keyword_options,
    parse_arguments,
    parse_overrides,
    resolve_options,
)
from ..options.training_arguments import HfAttnTrainingArguments
from ..tasks.scoring import score_evidence_attention, token_accuracy_at
from ..training.fitting import fit_run
from ..training.preparation import prepare_run
from ..utils.locks import FolderInUseError, folder_lock
from ..utils.progress import hidden_progress_bars
from ..utils.saving import last_complete_checkpoint, remove_if_worthless

__all__ = [
    "DATACLASSES",
    "HfAttnArguments",
    "HfAttnTrainingArguments",
    "TrainingResult",
    "parse_arguments",
    "parse_overrides",
    "run",
    "score_evidence_attention",
    "token_accuracy_at",
    "train",
]


@dataclass
class TrainingResult:
    """What `train` returns: the trained model and tokenizer, held-out metrics, and the Trainer."""

    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    metrics: dict[str, float]
    trainer: Trainer


def train(output_dir: str | Path | None = None, callbacks: Sequence[TrainerCallback] = (), **options: Any):
    """`hf-attn train` from Python: any field of `HfAttnArguments` or `HfAttnTrainingArguments` as a keyword
    (or a CLI alias: `epochs`, `batch_size`, `config_overrides`, ...); `config` and `task_args` may be dicts.

        train("runs/default", epochs=10, config={"hidden_size": 32})  # the default architecture (`hf-attn list`)
        train("runs/reviews", arch=ARCH, dataset="reviews.csv", label_column="stars", bf16=True)
    """
    given = keyword_options(options)
    if output_dir is not None:
        given["output_dir"] = str(output_dir)
    hf_attn_options, args = resolve_options(given)
    return run(hf_attn_options, args, callbacks)


def run(
    options: HfAttnArguments, args: HfAttnTrainingArguments, callbacks: Sequence[TrainerCallback] = ()
) -> TrainingResult:
    """The pipeline: the run prepared (data, shape and head, tokenizer, config, encoded splits) -> fitted (a first
    stage and word vectors where asked, model, `Trainer`, held-out metrics) -> saved folder with its card (and a Hub
    push)."""
    folder = Path(args.output_dir)
    existed = folder.exists()
    # One run per output folder: the main process holds its lock from the overwrite check to the last save, and a
    # second run into it is refused at once (the other processes of a distributed run write nothing there).
    lock = folder_lock(folder, writer="this run") if args.process_index == 0 else contextlib.nullcontext()
    with hidden_progress_bars(args.disable_tqdm):  # every library's bars, not only the Trainer's
        try:
            with lock:
                return _run(options, args, callbacks)
        except BaseException as error:
            if isinstance(error, FolderInUseError):
                raise  # the folder is another run's: nothing of it is this run's to clean up
            if not existed and args.process_index == 0:
                remove_if_worthless(folder)
            interrupted = isinstance(error, KeyboardInterrupt) and folder.is_dir()
            checkpoint = last_complete_checkpoint(str(folder)) if interrupted else None
            if checkpoint is None:
                raise
            # Ctrl-C: the one line the CLI prints says where the run can go on from.
            raise KeyboardInterrupt(
                f"the last complete checkpoint is {checkpoint}; continue with --resume_from_checkpoint true"
            ) from None


def _run(options: HfAttnArguments, args: HfAttnTrainingArguments, callbacks: Sequence[TrainerCallback]):
    check_output_folder(options, args)  # under the lock: no other run can fill the folder after the check
    push_repo = (args.hub_model_id or None) if args.push_to_hub else None
    args.push_to_hub = False  # hf_attn pushes the finished folder itself: no pickled arguments, no checkpoints
    prepared = prepare_run(options, args)
    fitted = fit_run(prepared, options, args, callbacks)
    output_dir = Path(args.output_dir)
    if options.save or push_repo:
        save_trained(fitted.trainer, prepared.tokenizer, output_dir, fitted.record, repo_id=push_repo)
        if fitted.trainer.is_world_process_zero():
            print(f"[hf-attn] saved the model to {output_dir}", flush=True)
    if push_repo and fitted.trainer.is_world_process_zero():
        commit = push_model_dir(output_dir, push_repo, private=bool(args.hub_private_repo))
        print(f"[hf-attn] pushed {output_dir} to {push_repo} at {commit.oid}", flush=True)
    return TrainingResult(
        model=fitted.trainer.model, tokenizer=prepared.tokenizer, metrics=fitted.metrics, trainer=fitted.trainer
    )


def main(argv: Sequence[str] | None = None) -> TrainingResult:
    """`hf-attn train` / `python -m hf_attn.commands.train`: parse, train, print the held-out metrics."""
    options, args = parse_arguments(argv)
    result = run(options, args)
    if result.trainer.is_world_process_zero():
        shown = {key: round(value, 4) for key, value in result.metrics.items() if not math.isnan(value)}
        print(json.dumps(shown, indent=2))
    return result


if __name__ == "__main__":  # `accelerate launch -m hf_attn.commands.train ...`: one-line errors, as `hf-attn train`
    import sys

    from ..utils.errors import run_command

    run_command(lambda argv: main(argv[1:]), ["train", *sys.argv[1:]])

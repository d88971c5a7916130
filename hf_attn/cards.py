"""Model cards rendered from the registry, the model's config and what training or conversion recorded.

A model folder written by hf_attn may hold two provenance files next to the weights; the card reads both:
- `hf_attn_training.json` (written by `hf_attn.commands.train`): task, data sizes, optimisation settings, metrics;
- `hf_attn_conversion.json` (written by the conversion scripts): original code, checkpoint hash, parity max-diffs.

Metadata goes through `huggingface_hub.ModelCardData`, so the model-index carries every metric (P@k, hit rate,
...), not only the ones transformers' own card writer keeps. `hf-attn card MODEL_DIR` writes `README.md`.

`save_trained` writes the whole folder a training run leaves: the model, its tokenizer, the training arguments as
JSON, the training record and the card written from them.
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from huggingface_hub import EvalResult, ModelCard, ModelCardData
from transformers import AutoConfig, PreTrainedConfig, PreTrainedModel, PreTrainedTokenizerBase, Trainer

from .recipes import paper_number
from .registry.table import Architecture, get_architecture
from .tasks.heads import load_trained
from .tasks.record import TrainingRecord
from .utils.paths import check_repo_id
from .utils.saving import staged_save
from .visualization.pictures import visualize

CONVERSION_FILE = "hf_attn_conversion.json"
# What `hf-attn faithfulness` measured of the model's attention (`FaithfulnessReport.as_dict`, and the data).
FAITHFULNESS_FILE = "hf_attn_faithfulness.json"


def template_text(architecture: Architecture) -> str:
    """The architecture's card template (`model_cards/<name>.md`, shipped inside the package)."""
    path = resources.files("hf_attn") / "model_cards" / f"{architecture.name}.md"
    if not path.is_file():
        raise ValueError(f"No card template for {architecture.name}: add model_cards/{architecture.name}.md.")
    return path.read_text()


def _read_json(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.is_file() else None


def _eval_results(training: TrainingRecord | None, pipeline_tag: str | None) -> list[EvalResult]:
    if not training or not training.metrics:
        return []
    return [
        EvalResult(
            task_type=pipeline_tag or "text-classification",
            dataset_type=training.dataset.type,
            dataset_name=training.dataset.name,
            dataset_split="test",
            metric_type=name,
            metric_name=name,
            metric_value=float(value),
        )
        for name, value in training.metrics.items()
    ]


def _training_section(training: TrainingRecord | None) -> str | None:
    if not training:
        return None
    rows = "\n".join(f"| {key} | {value} |" for key, value in training.settings.shown.items())
    return (
        f"Trained with `transformers.Trainer` through `hf_attn.commands.train` on {training.dataset.name} "
        f"({training.dataset.description}).\n\n| setting | value |\n|---|---|\n{rows}"
    )


def _evaluation_section(training: TrainingRecord | None) -> str | None:
    if not training or not training.metrics:
        return None
    paper = training.paper
    if paper is None:
        rows = "\n".join(f"| {name} | {value:.4f} |" for name, value in training.metrics.items())
        return f"Held-out split of {training.dataset.name}:\n\n| metric | value |\n|---|---|\n{rows}"
    # Trained from a recipe: the paper's number beside the measured one.
    rows = "\n".join(
        f"| {name} | {value:.4f} | {paper_number(paper) if name == paper['metric'] else ''} |"
        for name, value in training.metrics.items()
    )
    if paper["metric"] not in training.metrics:
        rows += f"\n| {paper['metric']} | not measured | {paper_number(paper)} |"
    note = f"\n\n{paper['note']}" if paper.get("note") else ""
    return (
        f"Held-out split of {training.dataset.name}, beside the paper's {paper.get('split', 'test')} result "
        f"({paper['source']}):\n\n| metric | measured | paper |\n|---|---|---|\n{rows}{note}"
    )


def _interval(estimate: dict[str, float]) -> str:
    """`mean [low, high]` of a recorded estimate."""
    return f"{estimate['mean']:.3f} [{estimate['low']:.3f}, {estimate['high']:.3f}]"


# How the card names the importances the attention is compared with.
REFERENCE_NAMES = {
    "integrated_gradients": "Integrated Gradients",
    "gradient_x_input": "gradient × input",
    "leave_one_out": "leave-one-out erasure",
}


def faithfulness_section(record: dict[str, Any] | None) -> str | None:
    """The card's "How faithful is this attention?" section, from what `hf-attn faithfulness` recorded: each
    figure for the attention beside Integrated Gradients' and a random ranking's, with its 95% interval."""
    if not record:
        return None
    names = ("attention", "integrated_gradients", "random")
    first, last = record["ks"][0], record["ks"][-1]
    rows = [
        ("comprehensiveness, AOPC (higher: more faithful)", [record["aopc"]["comprehensiveness"][n] for n in names]),
        ("sufficiency, AOPC (lower: more faithful)", [record["aopc"]["sufficiency"][n] for n in names]),
        (f"comprehensiveness at k = {first:g}%", [record["comprehensiveness"][n][0] for n in names]),
        (f"comprehensiveness at k = {last:g}%", [record["comprehensiveness"][n][-1] for n in names]),
        ("decision flips, top token removed", [record["decision_flips"][n] for n in names]),
    ]
    table = "\n".join(f"| {what} | {' | '.join(_interval(e) for e in row)} |" for what, row in rows)
    agreement = "\n".join(
        f"| {REFERENCE_NAMES.get(reference, reference)} | {_interval(row['attention'])} | {_interval(row['random'])} |"
        for reference, row in record["agreement"].items()
    )
    ks = ", ".join(f"{k:g}" for k in record["ks"])
    delta = _interval(record["ig_convergence_delta"])
    return (
        "## How faithful is this attention?\n\n"
        f"Measured by `hf-attn faithfulness` on {record['examples']} texts of {record.get('dataset', 'labelled data')}"
        f" (means, 95% intervals over the texts; ERASER's erasure at k = {ks}% of each text's tokens, removed by "
        "each ranking):\n\n"
        f"| measure | attention | Integrated Gradients | random |\n|---|---|---|---|\n{table}\n\n"
        "Kendall's τ between the attention's ranking of the tokens and another importance, beside a random "
        f"ranking's:\n\n| against | attention | random |\n|---|---|---|\n{agreement}\n\n"
        f"Integrated Gradients: {record['ig_steps']} steps, convergence delta {delta}.\n\n"
    )


def _conversion_section(conversion: dict[str, Any] | None) -> str | None:
    if not conversion:
        return None
    diffs = "\n".join(f"| {name} | {value:.2e} |" for name, value in conversion.get("max_abs_diff", {}).items())
    lines = [
        f"Converted from the original implementation ({conversion['original_code']}) with `{conversion['script']}`.",
        "",
        f"- checkpoint: `{conversion['checkpoint']}` (sha256 `{conversion['sha256']}`)",
    ]
    if diffs:
        lines += [
            "",
            "Parity with the original's outputs (max |difference|, fp32):",
            "",
            "| tensor | max diff |",
            "|---|---|",
            diffs,
        ]
    return "\n".join(lines)


def render_model_card(
    model_dir: str | Path,
    repo_id: str | None = None,
    base_model: str | None = None,
    config: PreTrainedConfig | None = None,
    destination: str | Path | None = None,
    training: TrainingRecord | None = None,
) -> ModelCard:
    """The card of the model saved in `model_dir`, as a `huggingface_hub.ModelCard`; `config` and `training` (the
    training record): the saved model's in memory (a training run's, just saved), else read from the folder;
    `destination`: the folder the model is moved to, where `model_dir` is a staged save's staging folder (the card
    names the destination)."""
    if repo_id is not None:
        check_repo_id(repo_id, "repo_id")
    from .utils.inputs import MODEL_FOLDER, read_input

    model_dir = Path(model_dir)
    if config is None:
        config = read_input("MODEL_DIR", model_dir, MODEL_FOLDER, lambda: AutoConfig.from_pretrained(model_dir))
    architecture = get_architecture(config.model_type)
    class_name = (config.architectures or [architecture.base_model_class.__name__])[0]
    head = next((h for h in architecture.heads if h.model_class.__name__ == class_name), None)
    pipeline_tag = head.pipeline_tag if head else None
    training = training if training is not None else TrainingRecord.read(model_dir)
    conversion = _read_json(model_dir / CONVERSION_FILE)
    shown = Path(destination) if destination is not None else model_dir
    name = repo_id or shown.resolve().name

    card_data = ModelCardData(
        model_name=name,
        library_name="transformers",
        license=architecture.license,
        tags=["hf_attn", architecture.name, *architecture.tags, "custom_code"],
        pipeline_tag=pipeline_tag,
        base_model=base_model,
        eval_results=_eval_results(training, pipeline_tag) or None,
    )
    paper = architecture.paper
    return ModelCard.from_template(
        card_data,
        template_str=template_text(architecture),
        # Given again: with eval results, `card_data` moves `model_name` into the model-index and the heading lost it.
        model_name=name,
        repo_id=repo_id or str(shown),
        model_class=class_name,
        auto_class=(head.auto_class if head else "AutoModel") or "",  # "": the head has no Auto class
        config=config.to_dict(),
        paper_title=paper.title,
        paper_authors=paper.authors,
        paper_venue=f"{paper.venue} {paper.year}",
        paper_url=paper.url,
        bibtex=paper.bibtex,
        original_code=architecture.original_code,
        training_details=_training_section(training),
        evaluation_table=_evaluation_section(training),
        conversion_provenance=_conversion_section(conversion),
    )


ATTENTION_PICTURE = "attention.png"


def draw_attention_picture(
    model_dir: str | Path,
    text: str,
    pair: str | None = None,
    model: PreTrainedModel | None = None,
    tokenizer: PreTrainedTokenizerBase | None = None,
    destination: str | Path | None = None,
    **options: Any,
) -> Path | None:
    """Draws the saved model's attention for `text` into `model_dir/attention.png` (`hf_attn.visualization`;
    `options` go to the architecture's view, e.g. a few-shot model's `support`): `model` and `tokenizer` where they
    are in memory (a training run's, just saved), else loaded from the folder. The picture is an extra of the card:
    when it cannot be drawn (no tokenizer in the folder, a head without a picture, any failure) the reason is
    reported on stderr, naming `destination` (where a staged save moves the folder) or `model_dir`, `None`
    returned, and the card written without it."""
    try:
        if model is None or tokenizer is None:
            model, tokenizer, _, _ = load_trained(str(model_dir))
        figure = visualize(model, tokenizer, text, pair=pair, **options)
        return figure.save_png(Path(model_dir) / ATTENTION_PICTURE)
    except Exception as error:  # reported, and the card still written
        shown = destination if destination is not None else model_dir  # the folder the user will find, not staging
        reason = str(error).replace(str(model_dir), str(shown))
        print(f"[hf-attn] no attention picture for {shown}: {type(error).__name__}: {reason}", file=sys.stderr)
        return None


def write_model_card(
    model_dir: str | Path,
    repo_id: str | None = None,
    base_model: str | None = None,
    example: dict | None = None,
    model: PreTrainedModel | None = None,
    tokenizer: PreTrainedTokenizerBase | None = None,
    destination: str | Path | None = None,
    training: TrainingRecord | None = None,
) -> Path:
    """Renders the card and writes it to `model_dir/README.md`; returns its path. With an example (`example`:
    `{"text", "pair"?, "support"?, "entities"?}`, else the one the training or conversion record holds), the card
    gets the picture of the model's attention for it (`attention.png`, linked from the card; it travels with
    `hf-attn push`). `model`, `tokenizer` and `training` (the training record): the saved ones, where they are still
    in memory (nothing is read back from the folder); else they are read from it. `destination`: where a staged save
    moves the folder."""
    model_dir = Path(model_dir)
    path = model_dir / "README.md"
    config = model.config if model is not None else None
    training = training if training is not None else TrainingRecord.read(model_dir)
    card = render_model_card(model_dir, repo_id, base_model, config=config, destination=destination, training=training)
    if example is None:
        conversion = _read_json(model_dir / CONVERSION_FILE) or {}
        example = (training.example if training else None) or conversion.get("example")
    options = {name: example[name] for name in ("support", "entities") if name in (example or {})}
    picture = (
        draw_attention_picture(
            model_dir, example["text"], example.get("pair"), model, tokenizer, destination=destination, **options
        )
        if example
        else None
    )
    if picture is not None:
        section = (
            f'## Attention\n\nWhat the model attends to in an example, "{example["text"][:120]}" (weights '
            f"as computed; `hf-attn visualize` draws any text):\n\n![attention]({ATTENTION_PICTURE})\n\n"
        )
        card.content = card.content.replace("## Citation", section + "## Citation", 1)
    measured = faithfulness_section(_read_json(model_dir / FAITHFULNESS_FILE))
    if measured is not None:
        card.content = card.content.replace("## Citation", measured + "## Citation", 1)
    card.save(path)
    return path


def save_trained(
    trainer: Trainer,
    tokenizer: PreTrainedTokenizerBase,
    output_dir: str | Path,
    record: TrainingRecord,
    repo_id: str | None = None,
) -> None:
    """From the main process: model (safetensors + code), tokenizer, the training arguments as JSON, the training
    record (`TrainingRecord.save`) and the model card. Not `Trainer.save_model`, which also pickles the arguments into
    `training_args.bin`: nothing we ship is a pickle."""
    trainer.accelerator.wait_for_everyone()
    if trainer.is_world_process_zero():
        model = trainer.accelerator.unwrap_model(trainer.model)
        with staged_save(output_dir) as staging:  # all written aside, then moved in, the weights last
            model.save_pretrained(staging)
            tokenizer.save_pretrained(staging)
            (staging / "training_args.json").write_text(trainer.args.to_json_string())
            record.save(staging)
            # The card from the model, tokenizer and record in memory, naming the folder it is moved to.
            write_model_card(
                staging, repo_id=repo_id, model=model, tokenizer=tokenizer, destination=output_dir, training=record
            )
    trainer.accelerator.wait_for_everyone()

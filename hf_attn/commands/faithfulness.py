"""`hf-attn faithfulness MODEL --dataset D`: how faithful a trained model's attention is, on labelled texts: its
agreement with Integrated Gradients, gradient × input and leave-one-out erasure (Kendall τ), ERASER's
comprehensiveness and sufficiency at k% of the tokens, and decision flips, each beside a random ranking's and with
its 95% confidence interval (`hf_attn.faithfulness`). It takes `hf-attn evaluate`'s data options and reads the rows
as evaluation does; the figures are printed as JSON (`--output_file` writes them too, `--plot F.png` draws the
erasure curves) and, for a model folder, kept in it (`hf_attn_faithfulness.json`), where `hf-attn card` reads them.
Integrated Gradients need Captum: `pip install "hf_attn[faithfulness]"`.

    hf-attn faithfulness runs/lin --dataset reviews.csv --text_column review --label_column stars --max_examples 500
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..faithfulness.erasure import ERASER_KS

if TYPE_CHECKING:
    from ..options.arguments import HfAttnArguments
    from ..registry.row import ArchitectureArguments

__all__ = ["Measurement", "faithfulness", "main"]

DEFAULT_EXAMPLES = 200


def _check_rows(rows: Any, options: HfAttnArguments, label: str | None) -> None:
    """Refuses, naming the option, rows without labels or with an empty text."""
    if label is None or label not in rows.column_names:
        given = f"--label_column {label}" if options.label_column else "--label_column"
        raise ValueError(
            f"{given}: --dataset {options.dataset} has no labels ({', '.join(rows.column_names)}): faithfulness is "
            "measured on labelled texts; name the label column."
        )
    column = options.text_column or "text"
    if column not in rows.column_names:
        return  # the data preparation names the missing column
    for index, text in enumerate(rows[column]):
        if text is None or not str(text).strip():
            raise ValueError(
                f"--dataset {options.dataset}: row {index} has an empty text ({column}): there is no token to rank."
            )


@dataclass(frozen=True)
class Measurement:
    """How the measures are taken: `ks`, the erasure bins (% of each text's tokens); `max_examples`, the rows
    measured (`None`: all); `ig_steps` and `internal_batch_size`, Integrated Gradients'; `batch_size`, examples (and
    erasures) a batch; `seed`, the random ranking's and its ties'."""

    ks: tuple[float, ...] = ERASER_KS
    max_examples: int | None = DEFAULT_EXAMPLES
    ig_steps: int = 32
    batch_size: int = 32
    internal_batch_size: int | None = None
    seed: int = 0


def faithfulness(
    model_path: str,
    options: HfAttnArguments,
    measurement: Measurement = Measurement(),
    output_file: str | None = None,
    plot: str | None = None,
    architecture_arguments: ArchitectureArguments | None = None,
) -> dict[str, Any]:
    """The faithfulness measures of the model at `model_path` on `options.dataset` (its first
    `measurement.max_examples` rows; `None`: all; for a few-shot model, held-out episodes of about as many queries
    drawn from every row), as a JSON-ready dict (`FaithfulnessReport.as_dict`); written to `output_file`, the erasure
    curves drawn to `plot` (PNG). The rows are read as `hf-attn evaluate` reads them: the training run's
    `--max_length` and the columns its tokenizer reads (`architecture_arguments`: STCKA's `--concept_column`) unless
    given."""
    from ..cards import FAITHFULNESS_FILE
    from ..data.request import DataRequest
    from ..faithfulness.attribution import CAPTUM_EXTRA
    from ..faithfulness.erasure import check_ks
    from ..faithfulness.measure import check_measurable, measure_faithfulness
    from ..tasks import encode_split
    from ..tasks.heads import load_trained, trained_head
    from ..tasks.scored import evaluation_columns, run_options, scored_data, scored_rows

    if options.dataset is None:
        raise ValueError("hf-attn faithfulness needs --dataset (a labelled file, a folder or a Hub id).")
    ks, max_examples, ig_steps = measurement.ks, measurement.max_examples, measurement.ig_steps
    batch_size, seed = measurement.batch_size, measurement.seed
    check_ks(ks)  # before the model loads
    _, head = trained_head(model_path)
    check_measurable(head)
    try:
        import captum  # noqa: F401
    except ModuleNotFoundError:
        raise ModuleNotFoundError(f"Integrated Gradients need Captum (an extra): {CAPTUM_EXTRA}") from None
    reused = run_options(model_path)  # the run's, where not given
    columns = evaluation_columns(architecture_arguments, reused)
    max_length = options.max_length if options.max_length is not None else reused.get("max_length")
    model, tokenizer, head, shape = load_trained(model_path, head=head)
    request = DataRequest.of(options, columns)
    rows = scored_rows(request)
    label = options.label_column or next((name for name in ("label", "labels") if name in rows.column_names), None)
    _check_rows(rows, options, label)
    if max_examples is not None and not shape.episodic:  # a few-shot model's episodes are drawn from every row
        rows = rows.select(range(min(max_examples, len(rows))))
    data = scored_data(shape, rows, request, model.config, options.episode_settings())
    encoded, _ = encode_split(data.eval, shape.encoder(data, tokenizer, model.config, head, max_length))
    inputs = [name for name in encoded.column_names if head.inputs.mask_of(name) is not None]
    if shape.episodic:  # held-out episodes as `hf-attn evaluate` draws them; each query is an example
        queries = model.config.num_ways * model.config.num_queries
        count = math.ceil((max_examples or DEFAULT_EXAMPLES) / queries)
        episodes = shape.episodes(encoded, model.config, data, count, seed + 1, fixed=True)
        items = [episodes[index] for index in range(len(episodes))]
    else:
        items = [{name: row[name] for name in inputs} for row in encoded]
    collator = head.inputs.collator(model.config)
    batches = [collator(items[start : start + batch_size]) for start in range(0, len(items), batch_size)]
    inputs_only = ({key: value for key, value in batch.items() if key != "labels"} for batch in batches)
    internal = measurement.internal_batch_size
    report = measure_faithfulness(model, head, inputs_only, ks, ig_steps, internal, batch_size, seed)
    figures = report.as_dict()
    figures["model"] = str(model_path)
    figures["head"] = head.model_class.__name__
    figures["dataset"] = Path(options.dataset).name if Path(options.dataset).exists() else options.dataset
    if Path(model_path).is_dir():  # kept beside the model: `hf-attn card` gives the figures a section
        (Path(model_path) / FAITHFULNESS_FILE).write_text(json.dumps(figures, indent=2))
        print(
            f"[hf-attn] recorded in {Path(model_path) / FAITHFULNESS_FILE} (hf-attn card adds them to the card)",
            file=sys.stderr,
            flush=True,
        )
    if output_file:
        Path(output_file).parent.mkdir(parents=True, exist_ok=True)
        Path(output_file).write_text(json.dumps(figures, indent=2))
    if plot:
        from ..faithfulness.curves import erasure_curves_png

        erasure_curves_png(report, plot, title=f"{head.model_class.__name__}: erasure by attention")
    return figures


def main(argv: list[str]) -> None:
    """`hf-attn faithfulness`: the options read, the model measured, its figures printed as JSON."""
    from ..options.arguments import evaluation_parser

    parser = evaluation_parser("hf-attn faithfulness")
    parser.add_argument(
        "--k",
        type=float,
        nargs="+",
        default=list(ERASER_KS),
        help="the erasure bins, in %% of each text's tokens (ERASER's: 1 5 10 20 50)",
    )
    parser.add_argument(
        "--max_examples",
        "--max-examples",
        type=int,
        default=DEFAULT_EXAMPLES,
        help=f"measure the first N rows (default {DEFAULT_EXAMPLES}; 0: all)",
    )
    parser.add_argument("--ig_steps", "--ig-steps", type=int, default=32, help="Integrated Gradients' steps")
    parser.add_argument(
        "--internal_batch_size",
        "--internal-batch-size",
        type=int,
        default=None,
        help="Integrated Gradients' points run together (default: --batch_size)",
    )
    parser.add_argument("--batch_size", "--batch-size", type=int, default=32, help="examples (and erasures) a batch")
    parser.add_argument("--seed", type=int, default=0, help="seeds the random ranking and its ties")
    parser.add_argument("--output_file", "--output-file", help="write the figures here as JSON")
    parser.add_argument("--plot", help="draw the erasure curves to this PNG")
    options, *own, rest = parser.parse_args_into_dataclasses(argv)
    if rest.ig_steps < 1:
        raise ValueError(f"--ig_steps {rest.ig_steps}: give 1 or more.")
    measurement = Measurement(
        tuple(rest.k), rest.max_examples or None, rest.ig_steps, rest.batch_size, rest.internal_batch_size, rest.seed
    )
    from ..tasks.scored import own_architecture_arguments  # after `--help`, which loads no torch

    own_options = own_architecture_arguments(rest.model, own)
    figures = faithfulness(rest.model, options, measurement, rest.output_file, rest.plot, own_options)
    print(json.dumps(figures, indent=2))

"""`hf-attn visualize MODEL TEXT --out F`: draw a trained model's attention for a text into a self-contained HTML file
or a PNG, with the architecture's own view (`hf_attn.visualization.pictures`). A view's own options come from its
row (`Architecture.view_arguments`): this module names none."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..utils.progress import progress


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="a trained model folder or Hub id (with its tokenizer)")
    parser.add_argument("text")
    parser.add_argument("--out", required=True, help="file.html (self-contained) or file.png")
    parser.add_argument(
        "--integrated_gradients",
        "--integrated-gradients",
        action="store_true",
        help="also the attention's importance of each token beside its Integrated Gradients (Captum: "
        'pip install "hf_attn[faithfulness]")',
    )
    add_view_arguments(parser, "the text")
    _add_own_view_options(parser)


def add_view_arguments(parser: argparse.ArgumentParser, whose: str) -> None:
    """What a picture may need besides its text: `--pair`, `--support`, `--entities` (`whose`: the text's role)."""
    parser.add_argument("--pair", help="a pair model's second text, or a seq2seq model's target (default: its output)")
    parser.add_argument(
        "--support",
        nargs="+",
        metavar="LABEL=TEXT",
        help="few-shot models: the support set, LABEL=TEXT entries or one .jsonl/.json/.csv/.tsv "
        "file of label and text (head, tail) rows",
    )
    parser.add_argument(
        "--entities",
        nargs=2,
        type=int,
        metavar=("HEAD", "TAIL"),
        help=f"few-shot relation models: the entity word indices of {whose}",
    )


def _add_own_view_options(parser: argparse.ArgumentParser) -> None:
    """Each architecture's own view options (`Architecture.view_arguments`, fields of a dataclass), once per option
    name: an `int`, a `str`, or a `list[int]` (`nargs="+"`), each defaulting to `None` (not given)."""
    import dataclasses
    import typing

    from ..registry.index import option_classes

    added = set()
    for options in option_classes("view_arguments").values():
        hints = typing.get_type_hints(options)
        for item in dataclasses.fields(options):
            if item.name in added:
                continue
            added.add(item.name)
            kind = typing.get_args(hints[item.name])[0]  # `X | None` -> X
            many = typing.get_origin(kind) is list
            element = typing.get_args(kind)[0] if many else kind
            spellings = dict.fromkeys((f"--{item.name}", f"--{item.name.replace('_', '-')}"))
            parser.add_argument(
                *spellings, type=element, nargs="+" if many else None, default=None, help=item.metadata.get("help")
            )


def _given_view_options(args: argparse.Namespace) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Per architecture with view options, those given: as typed, and as its view reads them (`view_options()`,
    which refuses a value it cannot read, before any model is looked up)."""
    import dataclasses

    from ..registry.index import option_classes

    given = {}
    for name, view_options in option_classes("view_arguments").items():
        typed = {item.name: getattr(args, item.name) for item in dataclasses.fields(view_options)}
        typed = {key: value for key, value in typed.items() if value is not None}
        given[name] = (typed, view_options(**typed).view_options())
    return given


def view_inputs(args: argparse.Namespace) -> dict:
    """`pair`, `support` and `entities` as `visualize` takes them, from the arguments given."""
    inputs = {"pair": args.pair, "entities": args.entities}
    if args.support:
        inputs["support"] = _support_rows(args.support)
    return {name: value for name, value in inputs.items() if value is not None}


def _support_rows(values: list[str]) -> list[tuple]:
    """`--support`: `LABEL=TEXT` entries, or one file (.jsonl/.json/.csv/.tsv) with `label` and `text` columns (and
    `head`, `tail` entity word indices for a relation model), the columns of `hf-attn train`'s few-shot data."""
    if len(values) == 1 and Path(values[0]).is_file():
        from datasets import Dataset

        path = values[0]
        if path.endswith((".csv", ".tsv")):
            rows = Dataset.from_csv(path, delimiter="\t" if path.endswith(".tsv") else ",")
        else:
            rows = Dataset.from_json(path)
        missing = {"label", "text"} - set(rows.column_names)
        if missing:
            raise ValueError(f"--support {path}: no column {sorted(missing)} (it has {rows.column_names}).")
        entities = {"head", "tail"} <= set(rows.column_names)
        return [(row["label"], row["text"], *((row["head"], row["tail"]) if entities else ())) for row in rows]
    rows = []
    for value in values:
        label, equals, text = value.partition("=")
        if not equals or not label or not text:
            raise ValueError(f"--support: {value!r} is not LABEL=TEXT (or one file of label/text rows).")
        rows.append((label, text))
    return rows


def run(args: argparse.Namespace) -> None:
    suffix = args.out.rsplit(".", 1)[-1].lower() if "." in args.out else ""
    if suffix not in ("html", "png"):
        raise ValueError(f"--out must end in .html or .png, got {args.out!r}.")
    given = _given_view_options(args)
    if not args.text.strip():
        raise ValueError("the text is empty: give the text whose attention to draw.")
    from ..tasks.heads import load_trained, trained_head
    from ..visualization.pictures import check_view_options, visualize

    config, head = trained_head(args.model)  # the options against the saved head, before its weights load
    options = {}
    for name, (typed, read) in given.items():  # another architecture's option as typed: refused below, named
        options.update(read if name == config.model_type else typed)
    options.update(view_inputs(args))
    check_view_options(head, options.pop("pair", None), options)
    progress(f"loading {args.model} ...")
    model, tokenizer, _, _ = load_trained(args.model, head=head)
    progress(f"drawing {type(model).__name__}'s attention ...")
    figure = visualize(
        model, tokenizer, args.text, pair=args.pair, integrated_gradients=args.integrated_gradients, **options
    )
    path = figure.save_html(args.out) if suffix == "html" else figure.save_png(args.out)
    panels = f"{len(figure.panels)} panel{'s' if len(figure.panels) != 1 else ''}"
    print(f"wrote {path} ({panels}; {figure.caption})")

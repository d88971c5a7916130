"""The `hf-attn` command.

hf-attn list                      the registered architectures
hf-attn train --output_dir DIR    train with Trainer, on a synthetic task or --dataset (see `hf-attn train -h`)
hf-attn evaluate MODEL --dataset  score a trained model on a dataset (JSON metrics)
hf-attn predict MODEL "text"      a trained model's prediction and the tokens it attends to (--file: one a line)
hf-attn recipes                   the papers' settings `hf-attn train --recipe NAME` runs
hf-attn demo                      train, save, reload and inspect Lin et al. (2017) in about a minute
hf-attn verify DIR                check a saved model folder's weights against their integrity records
hf-attn visualize MODEL "text" --out F  draw its attention for the text (F: .html or .png)
hf-attn convert ARCH ...          convert an original implementation's checkpoint (see hf-attn convert ARCH --help)

A mistake the command can tell (a wrong option or value, a missing or unreadable file, a folder that holds no
model) ends it with one line, `hf-attn COMMAND: what is wrong`, and exit status 1; `--debug` anywhere on the
command line shows the traceback instead. `list` and `--help` import neither torch nor transformers.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from . import demo  # light: its training imports wait for `run`
from .utils.errors import OneLineUsageErrors, debug_flags, run_command
from .utils.hub_faults import quiet_hub_logs
from .utils.progress import hidden_progress_bars


class _OneLineParser(OneLineUsageErrors, argparse.ArgumentParser):
    """argparse, with a usage error as one line: `hf-attn COMMAND: message (see hf-attn COMMAND --help)`."""


def _version() -> str:
    """The installed distribution's version (read from its metadata: no import of torch)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hf_attn")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def _list(_: argparse.Namespace) -> None:
    from .registry_index import read_index  # the registry rows read from their source files: no torch import

    for row in read_index():
        heads = ", ".join(head.model_class.name for head in row.heads)
        default = "  [hf-attn train's default]" if row.default else ""
        print(f"{row.name:24s} {row.display_name} ({row.year}, {row.reference}){default}\n{'':24s} heads: {heads}")


def _card(args: argparse.Namespace) -> None:
    from .cards import write_model_card
    from .utils.paths import check_repo_id

    if args.repo_id is not None:
        check_repo_id(args.repo_id, "--repo-id")
    example = None
    if args.example:
        from .pictures import check_view_options
        from .tasks.heads import trained_head

        example = {"text": args.example, **_view_inputs(args)}
        _, head = trained_head(args.model_dir, "MODEL_DIR")  # the example's options against the saved head first
        check_view_options(head, example.get("pair"), {k: v for k, v in example.items() if k not in ("text", "pair")})
    elif args.pair or args.support or args.entities:
        raise ValueError("--pair, --support and --entities belong to an --example.")
    written = write_model_card(args.model_dir, repo_id=args.repo_id, base_model=args.base_model, example=example)
    print(f"wrote {written}")


def _push(args: argparse.Namespace) -> None:
    from .hub import push_model_dir

    commit = push_model_dir(
        args.model_dir, args.repo_id, private=args.private, revision=args.revision, commit_message=args.message
    )
    print(f"pushed {args.model_dir} to {args.repo_id} (revision {args.revision or 'main'}): commit {commit.oid}")


def _verify(args: argparse.Namespace) -> None:
    from .utils.integrity import RECORD_KEY, verify_folder, write_records

    if args.update:
        print(f"recorded {', '.join(write_records(args.model_dir)) or 'no weight files'} ({RECORD_KEY})")
        return
    checked = verify_folder(args.model_dir, require_record=True)
    print(f"{args.model_dir}: {', '.join(checked)} match their integrity records")


def _recipes(_: argparse.Namespace) -> None:
    from .recipes import list_recipes, load_recipe, paper_number

    for name in list_recipes():
        recipe = load_recipe(name)
        paper = recipe.paper
        print(
            f"{name:24s} {recipe.description}\n{'':24s} paper: {paper['metric']} {paper_number(paper)} "
            f"({paper['source']})"
        )


def _evaluation_parser(prog: str):
    """`hf-attn train`'s data options (`HfAttnArguments`), each architecture's own (`Architecture.arguments`: the
    columns its tokenizer reads, STCKA's `--concept_column`) and a positional MODEL."""
    from .arguments import HfAttnArguments, architecture_arguments, one_line_parser

    parser = one_line_parser((HfAttnArguments, *architecture_arguments().values()), prog=prog)
    parser.add_argument("model", help="a trained model folder or Hub id")
    return parser


def _evaluation_architecture_arguments(model: str, given: list) -> object | None:
    """The options of the model's own architecture among `given` (one instance per architecture's options class,
    as parsed; `None` for an architecture without options). Evaluation reads only the columns they name
    (`columns()`, the training run's where not given); an option that only training reads (a knowledge base to build
    the vocabulary from), or another architecture's, is refused in one line."""
    import dataclasses

    from .arguments import architecture_arguments
    from .tasks.heads import trained_head

    def default(item: dataclasses.Field) -> object:
        return item.default_factory() if item.default_factory is not dataclasses.MISSING else item.default

    classes = architecture_arguments()
    typed = {
        (name, item.name): getattr(options, item.name)
        for name, options in zip(classes, given, strict=True)
        for item in dataclasses.fields(options)
        if item.init and getattr(options, item.name) != default(item)
    }
    config, _ = trained_head(model)
    own = next((options for name, options in zip(classes, given, strict=True) if name == config.model_type), None)
    read = {column.option for column in own.columns()} if own is not None else set()
    for (name, option), _ in typed.items():
        if name != config.model_type:
            raise ValueError(f"--{option} is an option of --arch {name}; {model} is a {config.model_type} model.")
        if option not in read:
            raise ValueError(
                f"--{option}: a training option of --arch {name}, which evaluation does not read (the saved "
                "tokenizer holds what training built from it)."
            )
    return own


def _evaluate(argv: list[str]) -> None:
    from .arguments import EPISODE_OPTIONS

    parser = _evaluation_parser("hf-attn evaluate")
    parser.add_argument("--batch_size", "--batch-size", type=int, default=64, help="evaluation batch size")
    parser.add_argument("--output_file", "--output-file", help="write the metrics here as JSON")
    sizes = {"n_way": "N, the classes", "k_shot": "K, the support texts of each class", "n_query": "the queries of "
             "each class"}  # fmt: skip
    for option in EPISODE_OPTIONS:
        text = f"a few-shot model's held-out episodes: {sizes[option]} (default: the trained one)"
        parser.add_argument(f"--{option}", f"--{option.replace('_', '-')}", type=int, help=text)
    options, *own, rest = parser.parse_args_into_dataclasses(argv)
    if not options.dataset:  # an option first, before the model is looked for
        raise ValueError("hf-attn evaluate needs --dataset (a file, a folder or a Hub id).")
    from . import inference

    metrics = inference.evaluate(
        rest.model, options, batch_size=rest.batch_size, output_file=rest.output_file,
        architecture_arguments=_evaluation_architecture_arguments(rest.model, own),
        episodes={option: getattr(rest, option) for option in EPISODE_OPTIONS},
    )  # fmt: skip
    print(json.dumps({key: round(value, 4) for key, value in metrics.items()}, indent=2))


def _texts(args: argparse.Namespace) -> list[str]:
    """`predict`'s texts: the positional ones, or the lines of `--file` (`-`: standard input), never both; a lone
    positional text that names an existing file is refused (the user meant `--file`)."""
    if args.file is not None and args.texts:
        raise ValueError("give the texts either on the command line or with --file, not both.")
    if args.file is None:
        if not args.texts:
            raise ValueError("give the texts to predict, or --file PATH (one text a line; '-' reads standard input).")
        if len(args.texts) == 1 and Path(args.texts[0]).is_file():
            raise ValueError(
                f"{args.texts[0]!r} is a file: pass --file {args.texts[0]} to predict each of its lines (a text is "
                "taken as it is)."
            )
        return args.texts
    if args.file == "-":
        lines = sys.stdin.read().splitlines()
    else:
        try:
            lines = Path(args.file).read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            raise FileNotFoundError(f"--file {args.file}: no such file.") from None
        except UnicodeDecodeError as error:
            raise ValueError(f"--file {args.file}: not UTF-8 ({error.reason} at byte {error.start}).") from None
    texts = [line for line in lines if line.strip()]
    if not texts:
        raise ValueError(f"--file {args.file} holds no text (one text a line).")
    return texts


def _predict(argv: list[str]) -> None:
    parser = _OneLineParser(prog="hf-attn predict")
    parser.add_argument("model", help="a trained model folder or Hub id")
    parser.add_argument("texts", nargs="*", help="the texts (or --file)")
    parser.add_argument("--file", help="read the texts from this file, one a line ('-': standard input)")
    parser.add_argument("--pair", nargs="+", help="the second text of each pair (pair models)")
    parser.add_argument("--top_k", "--top-k", type=int, default=5, help="how many attended tokens to show")
    parser.add_argument("--json", action="store_true", help="print one JSON list (text, prediction, attended)")
    args = parser.parse_args(argv)
    if args.top_k < 0:
        raise ValueError(f"--top_k {args.top_k}: give 0 or more tokens to show.")
    args.texts = _texts(args)
    from . import inference

    results = inference.predict(args.model, args.texts, args.pair, args.top_k)
    if args.json:
        print(json.dumps([{"text": t, **r} for t, r in zip(args.texts, results, strict=True)], ensure_ascii=False))
        return
    for text, result in zip(args.texts, results, strict=True):
        attended = result.pop("attended", None)
        print(f"{text}\n  -> {json.dumps(result, ensure_ascii=False)}")
        if attended:
            print("  attends to: " + ", ".join(f"{token} {weight:.3f}" for token, weight in attended))


def _add_view_arguments(parser: argparse.ArgumentParser, whose: str) -> None:
    """What a picture may need besides its text: `--pair`, `--support`, `--entities` (`whose`: the text's role)."""
    parser.add_argument("--pair", help="a pair model's second text, or a seq2seq model's target (default: its output)")
    parser.add_argument("--support", nargs="+", metavar="LABEL=TEXT",
                        help="few-shot models: the support set, LABEL=TEXT entries or one .jsonl/.json/.csv/.tsv "
                        "file of label and text (head, tail) rows")  # fmt: skip
    parser.add_argument("--entities", nargs=2, type=int, metavar=("HEAD", "TAIL"),
                        help=f"few-shot relation models: the entity word indices of {whose}")  # fmt: skip


def _add_own_view_options(parser: argparse.ArgumentParser) -> None:
    """Each architecture's own view options (`Architecture.view_arguments`, fields of a dataclass), once per option
    name: an `int`, a `str`, or a `list[int]` (`nargs="+"`), each defaulting to `None` (not given)."""
    import dataclasses
    import typing

    from .registry_index import option_classes

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
            parser.add_argument(*spellings, type=element, nargs="+" if many else None, default=None,
                                help=item.metadata.get("help"))  # fmt: skip


def _given_view_options(args: argparse.Namespace) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Per architecture with view options, those given: as typed, and as its view reads them (`view_options()`,
    which refuses a value it cannot read, before any model is looked up)."""
    import dataclasses

    from .registry_index import option_classes

    given = {}
    for name, view_options in option_classes("view_arguments").items():
        typed = {item.name: getattr(args, item.name) for item in dataclasses.fields(view_options)}
        typed = {key: value for key, value in typed.items() if value is not None}
        given[name] = (typed, view_options(**typed).view_options())
    return given


def _view_inputs(args: argparse.Namespace) -> dict:
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


def _visualize(args: argparse.Namespace) -> None:
    suffix = args.out.rsplit(".", 1)[-1].lower() if "." in args.out else ""
    if suffix not in ("html", "png"):
        raise ValueError(f"--out must end in .html or .png, got {args.out!r}.")
    given = _given_view_options(args)
    if not args.text.strip():
        raise ValueError("the text is empty: give the text whose attention to draw.")
    from . import inference
    from .pictures import check_view_options, visualize

    config, head = inference.trained_head(args.model)  # the options against the saved head, before its weights load
    options = {}
    for name, (typed, read) in given.items():  # another architecture's option as typed: refused below, named
        options.update(read if name == config.model_type else typed)
    options.update(_view_inputs(args))
    check_view_options(head, options.pop("pair", None), options)
    _progress(f"loading {args.model} ...")
    model, tokenizer, _, _ = inference.load_trained(args.model, head=head)
    _progress(f"drawing {type(model).__name__}'s attention ...")
    figure = visualize(model, tokenizer, args.text, pair=args.pair, **options)
    path = figure.save_html(args.out) if suffix == "html" else figure.save_png(args.out)
    panels = f"{len(figure.panels)} panel{'s' if len(figure.panels) != 1 else ''}"
    print(f"wrote {path} ({panels}; {figure.caption})")


def _train(argv: list[str]) -> None:
    from .arguments import HELP_ALL, help_request, print_train_help

    request = help_request(argv)  # the request's one look at its help flags
    if request == HELP_ALL:
        from .options import print_full_help  # transformers' every option: loads transformers

        print_full_help()
    elif request is not None:
        print_train_help()  # answered before the training code loads (seconds)
    else:
        from . import training

        training.main(argv)


def _convert(argv: list[str]) -> None:
    """`hf-attn convert ARCH ...`: the converter of the architecture's folder (its row's `converter`), given the rest
    of the command line."""
    import importlib

    from .registry_index import read_index

    converters = {row.name: row.converter for row in read_index() if row.converter}
    usage = f"usage: hf-attn convert ARCH [options]; ARCH is one of {', '.join(sorted(converters))}"
    if not argv or argv[0] in ("-h", "--help"):
        print(f"{usage}\n(hf-attn convert ARCH --help: that converter's options)")
        return
    if argv[0] not in converters:
        raise SystemExit(f"hf-attn convert: no converter for {argv[0]!r} ({usage.removeprefix('usage: ')})")
    module = importlib.import_module(f"hf_attn.models.{argv[0]}.{converters[argv[0]]}")
    module.main(argv[1:], prog=f"hf-attn convert {argv[0]}")


def _progress(message: str) -> None:
    """A step of a slow command, on a terminal's standard error (a log gets the result alone, as with the bars)."""
    if not _quiet:
        print(message, file=sys.stderr)


# Whether the running command shows no progress (bars, steps): decided once, by `main`, when standard error is not a
# terminal (a log file, a pipe, a test) or `--no-progress` asks.
_quiet = False
NO_PROGRESS = {"--no-progress", "--disable_tqdm", "--disable-tqdm"}  # train's spellings of TrainingArguments' switch


# Commands with their own parsers (HfArgumentParser), given the rest of the command line as it is.
PASSTHROUGH = {
    "train": (_train, "train with Trainer: a synthetic task or --dataset; every TrainingArguments flag"),
    "evaluate": (_evaluate, "score a trained model on a dataset; prints and writes JSON metrics"),
    "predict": (_predict, "a trained model's predictions for texts, with the tokens it attends to"),
    "convert": (_convert, "convert an original implementation's checkpoint to an hf_attn model folder"),
}


def main(argv: list[str] | None = None) -> None:
    """Runs a command; a user's mistake ends it with one line and exit status 1 (`SystemExit`), or with its
    traceback under `--debug` (`hf_attn.utils.errors.run_command`)."""
    global _quiet
    argv = list(sys.argv[1:] if argv is None else argv)
    _quiet = not sys.stderr.isatty() or bool(NO_PROGRESS & set(argv))
    if _quiet and argv[:1] == ["train"] and not NO_PROGRESS & set(argv):
        argv = [*argv, "--no-progress"]  # the Trainer's own bars too (TrainingArguments.disable_tqdm)
    if not debug_flags(argv):  # a failed transfer is told once, in its one line; --debug shows every retry
        quiet_hub_logs()
    with hidden_progress_bars(_quiet):
        run_command(_run, argv)


def _run(argv: list[str]) -> None:
    if argv and argv[0] in PASSTHROUGH:
        PASSTHROUGH[argv[0]][0](argv[1:])
        return
    parser = _OneLineParser(prog="hf-attn", description="Classic attention architectures of NLP.")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error (any command)")
    parser.add_argument("--version", action="version", version=f"hf-attn {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_OneLineParser)
    commands.add_parser("list", help="list the registered architectures").set_defaults(run=_list)
    for name, (_, help_text) in PASSTHROUGH.items():
        commands.add_parser(name, help=help_text, add_help=False)
    commands.add_parser("recipes", help="the papers' settings (hf-attn train --recipe NAME)").set_defaults(
        run=_recipes
    )
    demo_parser = commands.add_parser("demo", help="train, save, reload and inspect Lin et al. (2017)")
    demo.add_arguments(demo_parser)
    demo_parser.set_defaults(run=demo.run)
    card_parser = commands.add_parser("card", help="write README.md (the model card) into a saved model folder")
    card_parser.add_argument("model_dir")
    card_parser.add_argument("--repo-id", help="the Hub repo the card's snippets load from")
    card_parser.add_argument("--base-model", help="the Hub model this one was fine-tuned from")
    card_parser.add_argument("--example", help="a text whose attention the card shows (attention.png); default: "
                             "the training or conversion record's example")  # fmt: skip
    _add_view_arguments(card_parser, "the example")
    card_parser.set_defaults(run=_card)
    push_parser = commands.add_parser("push", help="upload a saved model folder to the Hub (token: HF_TOKEN)")
    push_parser.add_argument("model_dir")
    push_parser.add_argument("repo_id")
    push_parser.add_argument("--private", action="store_true", help="create the repo private")
    push_parser.add_argument("--revision", help="push to this branch (created if missing)")
    push_parser.add_argument("--message", help="commit message")
    push_parser.set_defaults(run=_push)
    verify_parser = commands.add_parser("verify", help="check a saved model folder's weights against their records")
    verify_parser.add_argument("model_dir")
    verify_parser.add_argument(
        "--update", action="store_true", help="record the weights as they are now instead (changed on purpose)"
    )
    verify_parser.set_defaults(run=_verify)
    visualize_parser = commands.add_parser("visualize", help="draw a trained model's attention for a text (HTML/PNG)")
    visualize_parser.add_argument("model", help="a trained model folder or Hub id (with its tokenizer)")
    visualize_parser.add_argument("text")
    visualize_parser.add_argument("--out", required=True, help="file.html (self-contained) or file.png")
    _add_view_arguments(visualize_parser, "the text")
    _add_own_view_options(visualize_parser)
    visualize_parser.set_defaults(run=_visualize)
    args = parser.parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main(sys.argv[1:])

"""A registry row: the `Architecture` a model folder declares in its `architecture.py`, with its `Head`s and `Paper`
(`hf_attn.registry.table` collects the rows; this module is what a row imports, so that the registry can import the
rows without a circle)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from pathlib import Path

    from transformers import PreTrainedConfig, PreTrainedModel

    from ..data.kinds import InputKind, LabelKind
    from ..data.masks import MaskSpec
    from ..data.task_data import TaskData
    from ..tokenization.kinds import TokenizerKind

__all__ = [
    "Architecture",
    "ArchitectureArguments",
    "Head",
    "Paper",
    "TokenizerColumn",
    "ViewArguments",
    "option_help",
]


def option_help(text: str, *aliases: str, **metadata: Any) -> dict[str, Any]:
    """A `field(metadata=...)` of an option: its help line and further spellings (`"--lr"`)."""
    return {"help": text, **({"aliases": list(aliases)} if aliases else {}), **metadata}


class TokenizerColumn(NamedTuple):
    """A column of the data that an architecture's tokenizer reads beside each text: the `hf-attn train` option that
    named it (for messages), the keyword of the tokenizer's call it goes to, and the column."""

    option: str
    keyword: str
    column: str


@dataclass
class ArchitectureArguments:
    """The `hf-attn train` options an architecture adds of its own (`Architecture.arguments`: a subclass in its
    folder, a plain dataclass that loads without torch, listed by `--help` under `_argument_group_name`). The training
    pipeline asks it two things, which an architecture without options answers with nothing:

    - `columns()`: the data's columns its tokenizer reads beside the text (`TokenizerColumn`s: kept by the loader,
      checked to exist, passed to every tokenizer call);
    - `tokenizer_knowledge(architecture, data)`: what its tokenizer kind's trainer reads beyond the texts
      (`TokenizerKind.reads_knowledge`), from these options and the data.
    """

    def columns(self) -> list[TokenizerColumn]:
        return []

    def tokenizer_knowledge(self, architecture: Architecture, data: TaskData) -> dict[str, Any]:
        return {}


@dataclass
class ViewArguments:
    """The `hf-attn visualize` options an architecture's attention view takes beyond the text (`Architecture.
    view_arguments`: a subclass in its folder, a plain dataclass that loads without torch; each field an option, its
    default `None`: not given). `view_options()` gives the view's keyword arguments from the options given, in the
    types its signature reads; a value it cannot read is refused naming the option."""

    def view_options(self) -> dict[str, Any]:
        return {item.name: getattr(self, item.name) for item in fields(self) if getattr(self, item.name) is not None}


@dataclass(frozen=True)
class Paper:
    """The paper an architecture implements."""

    title: str
    authors: str
    year: int
    venue: str
    arxiv: str | None
    bibtex: str
    link: str | None = None  # where a paper without an arXiv id lives (e.g. the ACL Anthology)
    url: str = field(init=False, compare=False)  # its arXiv page, or `link`

    def __post_init__(self) -> None:
        object.__setattr__(self, "url", f"https://arxiv.org/abs/{self.arxiv}" if self.arxiv else str(self.link))

    @property
    def reference(self) -> str:
        """`arXiv:<id>`, or the paper's link."""
        return f"arXiv:{self.arxiv}" if self.arxiv else self.url


@dataclass(frozen=True)
class Head:
    """A model class with the transformers Auto class it registers under (`None`: no Auto class fits, e.g. sentence
    pairs), the inputs it reads (an `InputKind` object of `hf_attn.data.kinds` or a folder's `kinds.py`, or its
    registered name: `SENTENCE`: `input_ids` `(B, T)`; `SENTENCE_PAIR`: those and `pair_input_ids`; `DOCUMENT`:
    `(B, S, T)` sentences of words; `DOCUMENT_PAIR`; `CHARACTERS`: `(B, T, C)` character ids; `SEQ2SEQ`: source ids
    and decoder ids; `SENTENCE_CONCEPTS`: words and `concept_input_ids`; `EPISODES`: below),
    the forward arguments that make it return its attention maps, the attention fields it must return (keys of its
    architecture's `attention_fields`; the first is scored against a synthetic task's evidence, `()` for a head
    without attention, e.g. a baseline), and what its `labels` are (a `LabelKind` object, or its name): `class`
    (one class id per example, `(B,)`), `token_class` (a class id per token, `(B, T)`), `token_vocab` (a vocabulary
    id per token, `(B, T)`: language models, seq2seq targets), `label_sequence` (a target id per step, `(B, T)`,
    from the config's `target_vocab_size`: labels generated as a sequence), `multi_hot` (`(B, num_labels)`
    indicators), `label_tree` (the same indicators, for a model trained level by level on a label tree) or
    `episode` (few-shot: the index of each query's class among its episode's N, `(B, Q)`; inputs `episodes`:
    queries `(B, Q, T)` and a support set `(B, N, K, T)`)."""

    model_class: type[PreTrainedModel]
    auto_class: str | None
    inputs: InputKind  # a registered input kind (`hf_attn.data.kinds`)
    pipeline_tag: str | None = None
    attention_kwargs: dict[str, Any] = field(default_factory=dict)
    labels: LabelKind = field(kw_only=True)  # a registered label kind (`CLASS`, `MULTI_HOT`, ...)
    attention_fields: tuple[str, ...] = ()
    scores_evidence: bool = True
    # The row the head belongs to (set by `Architecture`): the masks of its fields, its tokenizer, its view.
    architecture: Architecture = field(default=None, init=False, repr=False, compare=False)  # type: ignore[assignment]
    # The attention field scored against a synthetic task's evidence: the first of `attention_fields`; `None` for a
    # head without attention or whose maps are not scored (`scores_evidence=False`: e.g. per-token maps over a
    # sentence's own prefix, which no single evidence position explains).
    evidence_field: str | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        from ..data.kinds import InputKind, LabelKind

        evidence = self.attention_fields[0] if self.attention_fields and self.scores_evidence else None
        object.__setattr__(self, "evidence_field", evidence)

        for name, kind in (("inputs", InputKind), ("labels", LabelKind)):  # objects, never names
            if not isinstance(getattr(self, name), kind):
                raise TypeError(
                    f"{self.model_class.__name__}'s Head({name}=...) must be a registered {kind.__name__} object "
                    f"(`hf_attn.data.kinds`), got {getattr(self, name)!r}."
                )

    @property
    def has_attention(self) -> bool:
        return bool(self.attention_fields)


@dataclass(frozen=True)
class Architecture:
    """One row of the registry.

    Attributes:
        name: the `model_type`, also the folder name under `hf_attn/models` and `model_cards`.
        display_name: how people call it.
        config_class / base_model_class / heads: the classes (the base registers with `AutoModel`).
        paper / original_code: provenance for cards and docs.
        tokenizer: the tokenizer kind (`hf_attn.tokenization.kinds`: `WORD_LEVEL_TOKENIZER`, `DOCUMENT_TOKENIZER`,
            `BPE_TOKENIZER`; a folder's own in its `kinds.py`: ELMo's `CHARACTER_TOKENIZER`, STCKA's
            `CONCEPT_TOKENIZER`), or its name.
        synthetic_task: the task in `hf_attn.data` it learns in tests and the demo.
        example_files: writes the architecture's own example data files, in the layout of its original's data
            (`hf_attn.tasks.examples.write_example_files` calls it with the folder, the row count and the seed), from
            the folder's `synthetic_<name>.py`; `None`: the shared example files serve it.
        attention_fields: output field -> the input mask over its keys, for every field holding attention
            distributions (a tensor or a tuple of per-layer tensors; rows sum to 1 over unmasked keys, 0 when no key
            is unmasked). The mask is named as an input (`attention_mask`: keys are its last axis) or, for keys
            that are sentences of a document, as `attention_mask/sentences` (a sentence is unmasked when any of
            its words is). `support_attention_mask/instances`: keys are the support instances of a
            few-shot episode (`(B, N, K)`; one counts when any of its tokens is unmasked).
            `attention_mask/causal`: a sequence attending over its own prefix, `(B, T, T)`: row t
            reads keys 0..t, and a padded token's row is empty. `attention_mask@pair_attention_mask`: rows are the
            tokens of the second mask (a padded one's row is empty), keys those of the first.
            `attention_mask/<level>` with a level of the folder's own (`hf_attn.data.masks.register_mask_level`, in
            its `kinds.py`), and `#hops`, `#labels`, `#features`: what the rows of a map of several distributions
            are (`hf_attn.data.masks`). The common tests check them; the first one is scored against a synthetic
            task's evidence.
        pretraining_head: the class name of a head trained first, as a language model on the task's own texts,
            whose base model every other head of the architecture then starts from (ELMo's biLM, §3 of its paper);
            `None`: the task head trains alone. The training pipeline runs the stage; nothing else branches on it.
        attention_view: the architecture's own attention picture (`hf_attn.visualization.visualize` calls it), a
            function `(model, head, tokenizer, text, pair, **options) -> (panels, caption)`, kept in the folder's
            `visualization_<name>.py`; `None`: the maps are drawn from `attention_fields` by the generic view of
            the head's inputs (a text, a pair, a document, a text and its concepts).
        token_importance: how the architecture's maps become one importance per token of its (first) text, a
            function `(head, inputs, output) -> Tensor` in the shape of its `attention_mask`, kept beside its view in
            the folder's `visualization_<name>.py`; `None`: the reading of `hf_attn.data.importance` (the
            mean of a map's rows, a document's word weights times their sentence's, the attention a token
            receives). What the faithfulness measures (`hf-attn faithfulness`) rank and erase.
        importance_over: the mask spec (as `attention_fields`' are) of the units that importance is over, ranked
            and erased: the text's tokens (`attention_mask`) unless the evidence is elsewhere (STCKA: its concepts,
            `concept_attention_mask`; Proto-HATT: an episode's support instances,
            `support_attention_mask/instances`).
        tiny_config: keyword arguments of a config small enough for unit tests.
        license / tags: card metadata.
        converter: the folder's module that converts an original implementation's checkpoint (its
            `main(argv, prog)` is what `hf-attn convert <name> ...` runs); `None`: there is no original to convert.
        arguments: the architecture's own `hf-attn train` options, a subclass of
            `hf_attn.options.arguments.ArchitectureArguments` in a module of the folder that loads without torch
            (STCKA's knowledge base and concept column); `None`: none.
        view_arguments: the `hf-attn visualize` options of its `attention_view`, a subclass of `ViewArguments` in a
            module of the folder that loads without torch (AttentionXML's `--top_k`, the Transformer's `--heads` and
            `--layers`); `None`: its view takes only the text and what the head reads (`--pair`, `--support`).
        schedules: the training schedules of its paper, by the `--schedule` name that picks them (the Transformer's
            `noam`), each a function `(config_value, warmup_steps) -> TrainingArguments keywords`, `config_value(name)`
            being the value a config field will have in the run (`hf_attn.options.reading.config_value`), kept in the
            folder's `schedules_<name>.py`; `{}`: none (`--schedule noam` is refused for it in one line).
        default: the architecture `hf-attn train` and `train()` train when neither `arch` nor a recipe names one
            (exactly one row says `True`).
        demo: what `hf-attn demo` trains when this row is the default: `config` (the fields of a model small
            enough to learn its synthetic task in a minute on a CPU) and any other `train()` option (its learning
            rate); the default row must say it.
        tasks: the folder's module of task shapes of its own (a `TASK_SHAPES` tuple of `hf_attn.tasks.TaskShape`
            subclasses, which `hf_attn.tasks.heads` reads when it builds the table of shapes: AttentionXML's
            label-tree training); `None`: its heads train on the shared shapes.
    """

    name: str
    display_name: str
    config_class: type[PreTrainedConfig]
    base_model_class: type[PreTrainedModel]
    heads: tuple[Head, ...]
    paper: Paper
    original_code: str | None
    tokenizer: TokenizerKind
    synthetic_task: str
    attention_fields: dict[str, str]
    pretraining_head: str | None = None
    attention_view: Callable[..., tuple[list[Any], str]] | None = None
    token_importance: Callable[..., Any] | None = None
    importance_over: str = "attention_mask"
    tiny_config: dict[str, Any] = field(default_factory=dict)
    license: str = "apache-2.0"
    tags: tuple[str, ...] = ()
    converter: str | None = None
    arguments: type | None = None
    view_arguments: type | None = None
    tasks: str | None = None
    example_files: Callable[[Path, int, int], None] | None = None
    schedules: dict[str, Callable[..., dict[str, Any]]] = field(default_factory=dict)
    default: bool = False
    demo: dict[str, Any] = field(default_factory=dict)

    # `attention_fields` parsed once (`MaskSpec`): what every reader of the maps' keys uses.
    attention_masks: dict[str, MaskSpec] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        from ..data.masks import MaskSpec
        from ..tokenization.kinds import TokenizerKind

        if not isinstance(self.tokenizer, TokenizerKind):
            raise TypeError(
                f"hf_attn/models/{self.name}: tokenizer= must be a registered TokenizerKind object "
                f"(`hf_attn.tokenization.kinds`), got {self.tokenizer!r}."
            )
        for head in self.heads:
            object.__setattr__(head, "architecture", self)
        masks = {}
        for name, spec in self.attention_fields.items():
            try:
                masks[name] = MaskSpec.parse(spec)
            except ValueError as error:
                raise ValueError(f"{self.name}: attention field {name!r}: {error}") from None
        try:
            MaskSpec.parse(self.importance_over)
        except ValueError as error:
            raise ValueError(f"{self.name}: importance_over: {error}") from None
        object.__setattr__(self, "attention_masks", masks)

    @property
    def public_objects(self) -> list[Any]:
        """The classes the row names, which `import hf_attn` exposes (its folder's `__all__` lists them, with any
        other public object of the folder: `hf_attn.registry.index.public_names`)."""
        return [self.config_class, self.base_model_class, *(head.model_class for head in self.heads)]

"""The one table of hf_attn: every architecture, its classes, paper, original code, tokenizer, synthetic task and
card metadata. Auto registration, `import hf_attn`, the common tests, the CLI and the model cards all read it.

Each model folder declares its own row (`hf_attn/models/<name>/architecture.py`: `ARCHITECTURE = Architecture(...)`);
`ARCHITECTURES` is built by finding the folders, so adding an architecture touches its folder, its card template and
its tests (CONTRIBUTING.md). A folder that misses a piece fails here, with a message naming the piece.

This module imports neither torch nor transformers: the rows import the models, so `ARCHITECTURES` is read from the
folders when first asked for (`__getattr__`, PEP 562), and a folder's `architecture.py` can import this module
without a circle.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .registry_index import ROW_FILE

if TYPE_CHECKING:
    from transformers import PreTrainedConfig, PreTrainedModel, PreTrainedTokenizerFast

    from .data.kinds import InputKind, LabelKind, MaskSpec


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

    @property
    def url(self) -> str:
        return f"https://arxiv.org/abs/{self.arxiv}" if self.arxiv else str(self.link)

    @property
    def reference(self) -> str:
        """`arXiv:<id>`, or the paper's link."""
        return f"arXiv:{self.arxiv}" if self.arxiv else self.url


@dataclass(frozen=True)
class Head:
    """A model class with the transformers Auto class it registers under (`None`: no Auto class fits, e.g. sentence
    pairs), the inputs it reads (`sentence`: `input_ids` `(B, T)`; `sentence_pair`: those and `pair_input_ids`;
    `document`: `(B, S, T)` sentences of words; `document_pair`; `characters`: `(B, T, C)` character ids;
    `seq2seq`: source ids and decoder ids; `sentence_concepts`: words and `concept_input_ids`; `episodes`: below),
    the forward arguments that make it return its attention maps, the attention fields it must return (keys of its
    architecture's `attention_fields`; the first is scored against a synthetic task's evidence, `()` for a head
    without attention, e.g. a baseline), and what its `labels` are: `class` (one class
    id per example, `(B,)`), `token_class` (a class id per token, `(B, T)`), `token_vocab` (a vocabulary id per
    token, `(B, T)`: language models, seq2seq targets), `label_sequence` (a target id per step, `(B, T)`, from the
    config's `target_vocab_size`: labels generated as a sequence), `multi_hot` (`(B, num_labels)` indicators),
    `label_tree` (the same indicators, for a model trained level by level on a label tree) or `episode` (few-shot:
    the index of each query's class among its episode's N, `(B, Q)`; inputs `episodes`: queries `(B, Q, T)` and a
    support set `(B, N, K, T)`)."""

    model_class: type[PreTrainedModel]
    auto_class: str | None
    inputs: InputKind | str  # a registered input kind, or its name (`hf_attn.data.kinds`)
    pipeline_tag: str | None = None
    attention_kwargs: dict[str, Any] = field(default_factory=dict)
    labels: LabelKind | str = "class"  # a registered label kind, or its name
    attention_fields: tuple[str, ...] = ()
    scores_evidence: bool = True
    # The row the head belongs to (set by `Architecture`): the masks of its fields, its tokenizer, its view.
    architecture: Architecture = field(default=None, init=False, repr=False, compare=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        from .data.kinds import get_input_kind, get_label_kind

        # The kinds' objects, whichever way the row named them (a kind compares equal to its name).
        object.__setattr__(self, "inputs", get_input_kind(self.inputs))
        object.__setattr__(self, "labels", get_label_kind(self.labels))

    @property
    def has_attention(self) -> bool:
        return bool(self.attention_fields)

    @property
    def evidence_field(self) -> str | None:
        """The attention field scored against a synthetic task's evidence: the first of `attention_fields`; `None`
        for a head without attention or whose maps are not scored (`scores_evidence=False`: e.g. per-token maps over
        a sentence's own prefix, which no single evidence position explains)."""
        return self.attention_fields[0] if self.attention_fields and self.scores_evidence else None


@dataclass(frozen=True)
class Architecture:
    """One row of the registry.

    Attributes:
        name: the `model_type`, also the folder name under `hf_attn/models` and `model_cards`.
        display_name: how people call it.
        config_class / base_model_class / heads: the classes (the base registers with `AutoModel`).
        paper / original_code: provenance for cards and docs.
        tokenizer: the tokenizer kind (`word_level`, `bpe`, `document`, `characters`; see `TOKENIZER_KINDS`).
        synthetic_task: the task in `hf_attn.data` it learns in tests and the demo.
        attention_fields: output field -> the input mask over its keys, for every field holding attention
            distributions (a tensor or a tuple of per-layer tensors; rows sum to 1 over unmasked keys, 0 when no key
            is unmasked). The mask is named as an input (`attention_mask`: keys are its last axis) or, for keys
            that are sentences of a document, as `attention_mask/sentences` (a sentence is unmasked when any of
            its words is). `support_attention_mask/instances`: keys are the support instances of a
            few-shot episode (`(B, N, K)`; one counts when any of its tokens is unmasked).
            `attention_mask/causal`: a sequence attending over its own prefix, `(B, T, T)`: row t
            reads keys 0..t, and a padded token's row is empty. `attention_mask@pair_attention_mask`: rows are the
            tokens of the second mask (a padded one's row is empty), keys those of the first.
            `attention_mask/blocks`: block self-attention maps `(B, 2, m, r, r)` over the tokens cut into m blocks
            of r, direction 0 reading the real tokens of the query's block strictly before it, direction 1
            strictly after (BiBloSA); `attention_mask/block_summaries`: `(B, 2, m, m)`, likewise over the blocks
            that hold a real token. The common tests check them; the first one is scored against a synthetic
            task's evidence.
        pretraining_head: the class name of a head trained first, as a language model on the task's own texts,
            whose base model every other head of the architecture then starts from (ELMo's biLM, §3 of its paper);
            `None`: the task head trains alone. The training pipeline runs the stage; nothing else branches on it.
        attention_view: the architecture's own attention picture (`hf_attn.visualization.visualize` calls it), a
            function `(model, head, tokenizer, text, pair, **options) -> (panels, caption)`, kept in the folder's
            `visualization_<name>.py`; `None`: the maps are drawn from `attention_fields` by the generic view of
            the head's inputs (a text, a pair, a document, a text and its concepts).
        tiny_config: keyword arguments of a config small enough for unit tests.
        license / tags: card metadata.
        exports: further public objects `import hf_attn` exposes (e.g. a decoding method).
    """

    name: str
    display_name: str
    config_class: type[PreTrainedConfig]
    base_model_class: type[PreTrainedModel]
    heads: tuple[Head, ...]
    paper: Paper
    original_code: str | None
    tokenizer: str
    synthetic_task: str
    attention_fields: dict[str, str]
    pretraining_head: str | None = None
    attention_view: Callable[..., tuple[list[Any], str]] | None = None
    tiny_config: dict[str, Any] = field(default_factory=dict)
    license: str = "apache-2.0"
    tags: tuple[str, ...] = ()
    exports: tuple[Any, ...] = ()

    # `attention_fields` parsed once (`MaskSpec`): what every reader of the maps' keys uses.
    attention_masks: dict[str, MaskSpec] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        from .data.kinds import MaskSpec

        for head in self.heads:
            object.__setattr__(head, "architecture", self)
        masks = {}
        for name, spec in self.attention_fields.items():
            try:
                masks[name] = MaskSpec.parse(spec)
            except ValueError as error:
                raise ValueError(f"{self.name}: attention field {name!r}: {error}") from None
        object.__setattr__(self, "attention_masks", masks)

    @property
    def public_objects(self) -> list[Any]:
        """What `import hf_attn` exposes of this architecture: the config, the base model, the heads, `exports`."""
        return [self.config_class, self.base_model_class, *(head.model_class for head in self.heads), *self.exports]


MODELS_DIR = Path(__file__).resolve().parent / "models"
CARDS_DIR = Path(__file__).resolve().parent / "model_cards"

# Tokenizer kind -> the module and name of the class `AutoTokenizer` gives for an architecture's folders (imported
# when registered: `tokenizer_class`).
TOKENIZER_KINDS: dict[str, tuple[str, str]] = {
    "word_level": ("hf_attn.tokenization.base", "HfAttnTokenizerFast"),
    "bpe": ("hf_attn.tokenization.base", "HfAttnTokenizerFast"),
    "document": ("hf_attn.tokenization.document", "DocumentTokenizerFast"),
    "characters": ("hf_attn.tokenization.elmo", "ElmoCharacterTokenizerFast"),
    "concepts": ("hf_attn.tokenization.concepts", "ConceptTokenizerFast"),
}


def tokenizer_class(kind: str) -> type[PreTrainedTokenizerFast]:
    """The tokenizer class of a tokenizer kind (`TOKENIZER_KINDS`)."""
    module, name = TOKENIZER_KINDS[kind]
    return getattr(importlib.import_module(module), name)


def _check_row(name: str, folder: Path, module: Any, cards_dir: Path) -> Architecture:
    """The folder's row, or a `ValueError` naming the piece the folder lacks."""
    where = f"hf_attn/models/{name}"
    for piece in (f"configuration_{name}.py", f"modeling_{name}.py"):
        if not (folder / piece).is_file():
            raise ValueError(
                f"{where} has no {piece}: a model folder holds its config and its model (CONTRIBUTING.md)."
            )
    row = getattr(module, "ARCHITECTURE", None)
    if row is None:
        raise ValueError(f"{where}/{ROW_FILE} declares no ARCHITECTURE = Architecture(...) (its registry row).")
    if not isinstance(row, Architecture):
        raise ValueError(f"{where}: ARCHITECTURE must be an hf_attn.registry.Architecture, got {type(row).__name__}.")
    if row.name != name:
        raise ValueError(f"{where}: the row's name is {row.name!r}; it must be the folder's name, {name!r}.")
    if row.config_class.model_type != name:
        raise ValueError(f"{where}: {row.config_class.__name__}.model_type must be {name!r}.")
    if row.pretraining_head is not None and row.pretraining_head not in {h.model_class.__name__ for h in row.heads}:
        raise ValueError(f"{where}: pretraining_head {row.pretraining_head!r} is not one of its heads.")
    for head in row.heads:
        unknown = [field for field in head.attention_fields if field not in row.attention_fields]
        if unknown:
            raise ValueError(
                f"{where}: {head.model_class.__name__}'s fields {unknown} have no mask in attention_fields."
            )
    if row.tokenizer not in TOKENIZER_KINDS:
        raise ValueError(f"{where}: unknown tokenizer kind {row.tokenizer!r}; known: {sorted(TOKENIZER_KINDS)}.")
    if not (cards_dir / f"{name}.md").is_file():
        raise ValueError(f"{where} has no card template: add model_cards/{name}.md.")
    return row


def _is_model_folder(path: Path) -> bool:
    return path.is_dir() and ((path / ROW_FILE).is_file() or (path / "__init__.py").is_file())


def discover_architectures(
    package: str = "hf_attn.models", models_dir: Path = MODELS_DIR, cards_dir: Path = CARDS_DIR
) -> dict[str, Architecture]:
    """Imports the row of every folder of `models_dir` (a package of `package`), by name."""
    rows = {}
    for folder in sorted(path for path in models_dir.iterdir() if _is_model_folder(path)):
        if not (folder / ROW_FILE).is_file():
            raise ValueError(f"hf_attn/models/{folder.name} has no {ROW_FILE}: a model folder declares its registry "
                             "row there (CONTRIBUTING.md).")  # fmt: skip
        module = importlib.import_module(f"{package}.{folder.name}.{ROW_FILE.removesuffix('.py')}")
        rows[folder.name] = _check_row(folder.name, folder, module, cards_dir)
    return rows


def _architectures() -> dict[str, Architecture]:
    """`ARCHITECTURES`, read from the folders on the first call. The dict is bound before it is filled: a row's
    modules (e.g. its attention view) may import it while the rows load, and then hold the same dict."""
    rows = globals().get("ARCHITECTURES")
    if rows is None:
        globals()["ARCHITECTURES"] = rows = {}
        try:
            rows.update(discover_architectures())
        except BaseException:
            del globals()["ARCHITECTURES"]  # a folder's error is raised again on the next look, not an empty table
            raise
    return rows


def __getattr__(name: str) -> Any:
    # `ARCHITECTURES` when first asked for (module docstring).
    if name == "ARCHITECTURES":
        return _architectures()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_architecture(name: str) -> Architecture:
    """The registry row of `name` (a `model_type`), with a clear error for unknown names."""
    architectures = _architectures()
    if name not in architectures:
        raise ValueError(f"Unknown architecture {name!r}; hf_attn has: {', '.join(sorted(architectures))}.")
    return architectures[name]


def list_models() -> list[str]:
    """The registered architecture names."""
    from .registry_index import read_index

    return [row.name for row in read_index()]

"""Shared test helpers: fixture paths, tiny models from the registry, and random inputs per input shape."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
import torch

from hf_attn.registry import ARCHITECTURES, Architecture, Head

REPO_ROOT = Path(__file__).resolve().parents[1]

# Prepended to scripts that run in a fresh interpreter where hf_attn must NOT be importable (remote-code tests):
# the finder makes `import hf_attn` fail even though the package is installed.
BLOCK_HF_ATTN = """
import importlib.abc, sys

class BlockHfAttn(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "hf_attn" or name.startswith("hf_attn."):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)")
        return None

sys.meta_path.insert(0, BlockHfAttn())
"""
SHARED_FIXTURES = REPO_ROOT.parent / "shared" / "fixtures"


def load_benchmark(name: str):
    """Loads `benchmarks/<name>.py` as running it does: with its folder (and `timing.py`) importable."""
    import importlib.util
    import sys

    folder = REPO_ROOT / "benchmarks"
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(folder))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
    return module


def fixture_dir(arch: str) -> Path:
    """`../shared/fixtures/<arch>`; fails (not skips) when absent, since CI always has it."""
    path = SHARED_FIXTURES / arch
    if not path.is_dir():
        pytest.fail(f"parity fixture missing: {path} (shared/ must lie beside the checkout)")
    return path


def tiny_config(architecture: Architecture, **overrides):
    return architecture.config_class(**{**architecture.tiny_config, **overrides})


def all_heads() -> list[tuple[Architecture, Head]]:
    """Every (architecture, head) pair of the registry, as pytest parameters with readable ids."""
    return [
        pytest.param(architecture, head, id=f"{name}-{head.model_class.__name__}")
        for name, architecture in ARCHITECTURES.items()
        for head in architecture.heads
    ]


def output_vocab_size(config) -> int:
    """The vocabulary of a model's generated ids: `target_vocab_size` where the target side has its own (SGM's
    specials + labels), else `vocab_size`."""
    return getattr(config, "target_vocab_size", config.vocab_size)


def _token_ids(
    config, lengths: list[int], generator: torch.Generator, vocab_size: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded random ids (below `vocab_size`, default the config's) that avoid the padding id, and their
    mask."""
    longest = max(max(lengths), 1)
    pad = config.pad_token_id if config.pad_token_id is not None else 0
    ids = torch.randint(0, (vocab_size or config.vocab_size) - 1, (len(lengths), longest), generator=generator)
    ids = ids + (ids >= pad).long()  # skip the pad id
    mask = (torch.arange(longest)[None, :] < torch.tensor(lengths)[:, None]).long()
    return ids.masked_fill(mask == 0, pad), mask


def document_sentence_lengths(length: int) -> list[int]:
    """The sentence lengths of a test document of "length" n: up to 3 sentences of varied lengths (n, n−1, n−2,
    rotated so the longest is not always first); n = 0 is an empty document."""
    sentences = [length - k for k in range(min(3, length))]
    return sentences[1:] + sentences[:1]


def documents(
    sentence_lengths: list[list[int]], vocab_size: int, pad_token_id: int = 0, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random right-padded documents `(B, S, T)` (ids avoid the padding id) and their mask, from each document's
    sentence lengths (0 = an empty sentence)."""
    sentences = max([len(document) for document in sentence_lengths] + [1])
    words = max([n for document in sentence_lengths for n in document] + [1])
    mask = torch.zeros(len(sentence_lengths), sentences, words, dtype=torch.long)
    for b, document in enumerate(sentence_lengths):
        for s, n in enumerate(document):
            mask[b, s, :n] = 1
    ids = torch.randint(0, vocab_size - 1, mask.shape, generator=generator)
    ids = ids + (ids >= pad_token_id).long()  # skip the pad id
    return ids.masked_fill(mask == 0, pad_token_id), mask


def _document_ids(config, lengths: list[int], generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Random documents whose sentence lengths follow `document_sentence_lengths`, and their mask."""
    pad = config.pad_token_id if config.pad_token_id is not None else 0
    return documents([document_sentence_lengths(n) for n in lengths], config.vocab_size, pad, generator)


def _character_ids(config, lengths: list[int], generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """ELMo inputs: `n` random words (1–8 random bytes each) between `<S>` and `</S>`, as the tokenizer builds
    them, `(B, n + 2, C)` character ids; a length of 0 is an all-padding row (no boundaries either)."""
    from hf_attn.tokenization.elmo import build_elmo_tokenizer

    tokenizer = build_elmo_tokenizer(max_characters_per_token=config.max_characters_per_token)
    sentences = []
    for n in lengths:
        sizes = torch.randint(1, 9, (n,), generator=generator).tolist()
        words = [bytes(torch.randint(97, 123, (size,), generator=generator).tolist()).decode() for size in sizes]
        sentences.append(words)
    encoded = tokenizer(sentences, is_split_into_words=True, return_tensors="pt")
    return encoded["input_ids"], encoded["attention_mask"]


def _episodes(config, lengths: list[int], generator: torch.Generator) -> dict[str, torch.Tensor]:
    """One few-shot episode per length n: N = `num_ways` classes of K = `num_shots` support instances and
    `num_queries` queries per class, of lengths n, n − 1, n − 2 (at least 1) in turn; n = 0 makes every query of
    the episode all padding (support instances always have a token). With `use_entity_positions`, each instance's
    head and tail entity lie among its tokens."""
    ways, shots, queries = config.num_ways, config.num_shots, config.num_queries * config.num_ways
    support_lengths = [max(n - (i % 3), 1) for n in lengths for i in range(ways * shots)]
    query_lengths = [max(n - (i % 3), 1) if n else 0 for n in lengths for i in range(queries)]
    support_ids, support_mask = _token_ids(config, support_lengths, generator)
    query_ids, query_mask = _token_ids(config, query_lengths, generator)
    batch = len(lengths)
    inputs = {
        "input_ids": query_ids.view(batch, queries, -1),
        "attention_mask": query_mask.view(batch, queries, -1),
        "support_input_ids": support_ids.view(batch, ways, shots, -1),
        "support_attention_mask": support_mask.view(batch, ways, shots, -1),
    }
    if config.use_entity_positions:
        for prefix, mask in (("", inputs["attention_mask"]), ("support_", inputs["support_attention_mask"])):
            tokens = mask.sum(-1, keepdim=True).clamp(min=1)
            inputs[prefix + "entity_positions"] = (
                torch.rand(*mask.shape[:-1], 2, generator=generator) * tokens
            ).long()
    return inputs


def make_inputs(head: Head, config, lengths: list[int], seed: int = 0, pair_lengths: list[int] | None = None):
    """Model inputs for `head.inputs` with the given per-example lengths (a 0 length is an all-padding row; for
    documents a length sets the sentences, see `document_sentence_lengths`); `pair_lengths` sets the second
    sequence's lengths (the hypothesis of a pair, the target of a seq2seq, the second view of a document pair)."""
    generator = torch.Generator().manual_seed(seed)
    if head.inputs == "episodes":
        return _episodes(config, lengths, generator)
    second = pair_lengths or [max(n, 1) for n in reversed(lengths)]
    if head.inputs in ("document", "document_pair"):
        input_ids, attention_mask = _document_ids(config, lengths, generator)
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if head.inputs == "document_pair":
            pair_ids, pair_mask = _document_ids(config, second, generator)
            inputs.update(pair_input_ids=pair_ids, pair_attention_mask=pair_mask)
        return inputs
    if head.inputs == "characters":
        input_ids, attention_mask = _character_ids(config, lengths, generator)
        return {"input_ids": input_ids, "attention_mask": attention_mask}
    input_ids, attention_mask = _token_ids(config, lengths, generator)
    inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
    if head.inputs == "sentence_pair":
        pair_ids, pair_mask = _token_ids(config, second, generator)
        inputs.update(pair_input_ids=pair_ids, pair_attention_mask=pair_mask)
    elif head.inputs == "seq2seq":
        decoder_ids, decoder_mask = _token_ids(config, second, generator, output_vocab_size(config))
        inputs.update(decoder_input_ids=decoder_ids, decoder_attention_mask=decoder_mask)
    elif head.inputs == "sentence_concepts":  # concept sets of varied sizes, some empty
        concept_ids, concept_mask = _token_ids(config, [(2 * n) % 5 for n in lengths], generator,
                                               config.concept_vocab_size)  # fmt: skip
        inputs.update(concept_input_ids=concept_ids, concept_attention_mask=concept_mask)
        if getattr(config, "char_feature_size", 0):  # each word's and concept's characters (1–4 bytes)
            for prefix, mask in (("", attention_mask), ("concept_", concept_mask)):
                sizes = torch.randint(1, 5, mask.shape, generator=generator) * mask
                char_mask = (torch.arange(4)[None, None, :] < sizes[..., None]).long()
                char_ids = torch.randint(1, 257, char_mask.shape, generator=generator) * char_mask
                inputs.update({f"{prefix}char_input_ids": char_ids, f"{prefix}char_attention_mask": char_mask})
    elif head.inputs != "sentence":
        raise NotImplementedError(f"no test inputs for {head.inputs!r} yet")
    return inputs


def make_labels(head: Head, config, inputs: dict[str, torch.Tensor], seed: int = 0) -> torch.Tensor:
    """By `head.labels`: class ids `(B,)`; multi-hot indicators `(B, num_labels)`; or a class id (`token_class`) or
    vocabulary id (`token_vocab`, `label_sequence`) per token, `(B, T)` with -100 at padding (the target side for
    seq2seq heads)."""
    generator = torch.Generator().manual_seed(seed + 1)
    batch_size = inputs["input_ids"].size(0)
    if head.labels == "episode":  # the class of each query among its episode's N; -100 for an all-padding query
        ways = inputs["support_input_ids"].size(1)
        labels = torch.randint(0, ways, inputs["input_ids"].shape[:2], generator=generator)
        return labels.masked_fill(~inputs["attention_mask"].bool().any(-1), -100)
    if head.labels == "class":
        return torch.randint(0, config.num_labels, (batch_size,), generator=generator)
    if head.labels in ("multi_hot", "label_tree"):
        return torch.randint(0, 2, (batch_size, config.num_labels), generator=generator).float()
    mask = inputs["decoder_attention_mask" if head.inputs == "seq2seq" else "attention_mask"]
    if head.labels in ("token_vocab", "label_sequence"):
        low, high = 1, output_vocab_size(config)
    else:
        low, high = 0, config.num_labels
    return torch.randint(low, high, mask.shape, generator=generator).masked_fill(mask == 0, -100)


def logits_shape(head: Head, config, inputs: dict[str, torch.Tensor]) -> tuple[int, ...]:
    batch_size = inputs["input_ids"].size(0)
    if head.labels == "episode":
        return (batch_size, inputs["input_ids"].size(1), inputs["support_input_ids"].size(1))
    if head.labels in ("class", "multi_hot", "label_tree"):
        return (batch_size, config.num_labels)
    tokens = inputs["decoder_input_ids" if head.inputs == "seq2seq" else "input_ids"].size(1)
    vocabulary = head.labels in ("token_vocab", "label_sequence")
    return (batch_size, tokens, output_vocab_size(config) if vocabulary else config.num_labels)


def key_mask(
    inputs: dict[str, torch.Tensor], spec: str, shape: tuple[int, ...] | None = None, block_length: int | None = None
) -> torch.Tensor:
    """The mask over an attention's keys, from the registry's spec: an input mask's name (keys = its last axis),
    `<mask>/sentences` (keys = sentences; a sentence counts when any of its words does), `<mask>/instances` (keys
    = support instances; an instance counts when any of its tokens does), `<mask>/causal` (`(B, T,
    T)`: row t keys 0..t, an empty row for a padded token), `<keys>@<queries>` (`(B, Q, K)`: an empty row for
    a padded query), `<mask>/blocks` (BiBloSA's intra-block maps `(B, 2, m, r, r)`: the tokens cut into blocks of r,
    direction 0 reads the real tokens of its block strictly before the query, direction 1 strictly after, a padded
    query reads none) or `<mask>/block_summaries` (its inter-block maps `(B, 2, m, m)`: likewise over the blocks
    holding a real token). The block specs take m (and r, for `/blocks`) from the weights' `shape`; `/block_summaries`
    takes r as `block_length`."""
    if "@" in spec:
        keys, _, queries = spec.partition("@")
        return inputs[queries].bool()[:, :, None] & inputs[keys].bool()[:, None, :]
    name, _, level = spec.partition("/")
    mask = inputs[name].bool()
    if level == "causal":
        prefix = torch.ones(mask.size(-1), mask.size(-1), dtype=torch.bool).tril()
        return mask[:, :, None] & prefix
    if level in ("blocks", "block_summaries"):
        blocks = shape[2]
        block_length = shape[-1] if level == "blocks" else block_length
        padded = torch.zeros(mask.size(0), max(blocks * block_length, mask.size(1)), dtype=torch.bool)
        padded[:, : mask.size(1)] = mask
        units = padded[:, : blocks * block_length].view(mask.size(0), blocks, block_length)
        if level == "block_summaries":
            units = units.any(dim=-1)[:, None, :]  # (B, 1, m): one sequence of blocks
        positions = torch.arange(units.size(-1))
        before = positions[None, :] < positions[:, None]  # key j strictly before query i
        both = units[..., :, None] & units[..., None, :]  # (…, L, L)
        return torch.stack([both & before, both & before.T], dim=1).reshape(shape)
    return mask.any(dim=-1) if level in ("sentences", "instances") else mask


def attention_maps(architecture, output, inputs) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """Every attention distribution a head returned, as (field, weights `(B, …, Q|R, K)`, key mask `(B, …, K)`);
    per-layer tuples are flattened. A `<mask>/block_summaries` field takes its block length from the head's
    `<mask>/blocks` field."""
    returned = {field: getattr(output, field, None) for field in architecture.attention_fields}
    block_lengths = {
        spec.partition("/")[0]: value.size(-1)
        for field, spec in architecture.attention_fields.items()
        if spec.endswith("/blocks") and (value := returned[field]) is not None
    }
    maps = []
    for field, spec in architecture.attention_fields.items():
        value = returned[field]
        if value is None:
            continue
        for index, weights in enumerate(value if isinstance(value, tuple) else (value,)):
            mask = key_mask(inputs, spec, tuple(weights.shape), block_lengths.get(spec.partition("/")[0]))
            maps.append((f"{field}[{index}]", weights, mask))
    return maps


def trim_like(batched: torch.Tensor, index: int, alone: torch.Tensor) -> torch.Tensor:
    """Example `index` of a batched output, cut to the shape of the same example run alone."""
    return batched[index : index + 1][tuple(slice(0, size) for size in alone.shape)]


def select_example(inputs: dict[str, torch.Tensor], index: int) -> dict[str, torch.Tensor]:
    """Example `index` of a batch, trimmed on every axis to the extent of its own mask (its longest sequence; for
    documents also its last sentence), as if it had been padded alone."""
    single = {}
    for name, tensor in inputs.items():
        if name.endswith("entity_positions"):  # token indices: cut like their texts, once these are cut
            continue
        mask = inputs[name.replace("input_ids", "attention_mask")][index].bool()
        extents = []
        for axis in range(mask.dim()):
            used = (
                mask.any(dim=tuple(other for other in range(mask.dim()) if other != axis)) if mask.dim() > 1 else mask
            )
            extents.append(int(used.nonzero().max()) + 1 if used.any() else 1)
        single[name] = tensor[index : index + 1][(slice(None), *(slice(0, extent) for extent in extents))]
    for name in [name for name in inputs if name.endswith("entity_positions")]:
        texts = single[name.replace("entity_positions", "input_ids")]
        single[name] = inputs[name][index : index + 1][tuple(slice(0, size) for size in texts.shape[:-1])]
    return single


@functools.cache
def corpus_tokenizer(kind: str, corpus: tuple[str, ...], concepts: tuple[tuple[str, str, float], ...] = ()):
    """A tokenizer of `kind` (each kind the registry names) trained on `corpus`, a concept tokenizer linking the
    `(entity, concept, score)` triples; the vocabularies of a tiny corpus fit the tiny configs."""
    from hf_attn.tokenization import (
        ConceptSource,
        build_elmo_tokenizer,
        train_bpe_tokenizer,
        train_concept_tokenizer,
        train_document_tokenizer,
        train_word_level_tokenizer,
    )

    knowledge: dict[str, list[tuple[str, float]]] = {}
    for entity, concept, score in concepts:
        knowledge.setdefault(entity, []).append((concept, score))
    builders = {
        "concepts": lambda: train_concept_tokenizer(
            list(corpus), concept_source=ConceptSource(knowledge), max_word_length=8
        ),
        "word_level": lambda: train_word_level_tokenizer(list(corpus)),
        "bpe": lambda: train_bpe_tokenizer(list(corpus), vocab_size=40, min_frequency=1),
        "document": lambda: train_document_tokenizer(list(corpus)),
        "characters": build_elmo_tokenizer,
    }
    return builders[kind]()

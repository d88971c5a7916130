"""Shared test helpers: fixture paths, tiny models from the registry, and random inputs per input shape."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from hf_attn.registry import ARCHITECTURES, Architecture, Head

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = REPO_ROOT.parent / "shared" / "fixtures"


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


def _token_ids(config, lengths: list[int], generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded random ids that avoid the padding id, and their mask."""
    longest = max(max(lengths), 1)
    pad = config.pad_token_id if config.pad_token_id is not None else 0
    ids = torch.randint(0, config.vocab_size - 1, (len(lengths), longest), generator=generator)
    ids = ids + (ids >= pad).long()  # skip the pad id
    mask = (torch.arange(longest)[None, :] < torch.tensor(lengths)[:, None]).long()
    return ids.masked_fill(mask == 0, pad), mask


def make_inputs(head: Head, config, lengths: list[int], seed: int = 0, pair_lengths: list[int] | None = None):
    """Model inputs for `head.inputs` with the given per-example lengths (a 0 length is an all-padding row)."""
    generator = torch.Generator().manual_seed(seed)
    input_ids, attention_mask = _token_ids(config, lengths, generator)
    inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
    if head.inputs == "sentence_pair":
        pair_ids, pair_mask = _token_ids(config, pair_lengths or [max(n, 1) for n in reversed(lengths)], generator)
        inputs.update(pair_input_ids=pair_ids, pair_attention_mask=pair_mask)
    elif head.inputs != "sentence":
        raise NotImplementedError(f"no test inputs for {head.inputs!r} yet")
    return inputs


def make_labels(config, batch_size: int, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed + 1)
    return torch.randint(0, config.num_labels, (batch_size,), generator=generator)


def select_example(inputs: dict[str, torch.Tensor], index: int, lengths: dict[str, int]) -> dict[str, torch.Tensor]:
    """Example `index` of a batch, trimmed to its own length per sequence (`lengths` keyed by the ids' name)."""
    single = {}
    for name, tensor in inputs.items():
        ids_name = name.replace("attention_mask", "input_ids")
        single[name] = tensor[index : index + 1, : lengths[ids_name]]
    return single

"""transformers' output arguments, shared by every head (the head contract of CONTRIBUTING.md)."""

from __future__ import annotations

from transformers import PreTrainedConfig


def output_flags(
    config: PreTrainedConfig,
    output_attentions: bool | None,
    output_hidden_states: bool | None,
    return_dict: bool | None,
) -> tuple[bool, bool, bool]:
    """`(output_attentions, output_hidden_states, return_dict)` as transformers resolves them: an argument left
    `None` takes the config's value (`config.output_attentions`, `config.output_hidden_states`,
    `config.return_dict`)."""
    return (
        config.output_attentions if output_attentions is None else output_attentions,
        config.output_hidden_states if output_hidden_states is None else output_hidden_states,
        config.return_dict if return_dict is None else return_dict,
    )

"""transformers' output arguments (`hf_attn.layers.outputs.output_flags`): an argument given wins, one left `None`
takes the config's value."""

from __future__ import annotations

import itertools

from transformers import PreTrainedConfig

from hf_attn.layers.outputs import output_flags


def test_a_given_argument_wins_and_none_takes_the_configs():
    for config_values in itertools.product((False, True), repeat=3):
        attentions, hidden, return_dict = config_values
        config = PreTrainedConfig(output_attentions=attentions, output_hidden_states=hidden, return_dict=return_dict)
        assert output_flags(config, None, None, None) == config_values
        for given in itertools.product((False, True), repeat=3):
            assert output_flags(config, *given) == given

"""transformers' own common model tests (`ModelTesterMixin`, from the source distribution of the installed
transformers version: `tests/transformers_tests.py`) run on every head of the registry, and
`GenerationTesterMixin` on the heads that generate. One registry-driven tester describes each head to the mixin, so
an architecture is covered the day its row lands.

Where a head legitimately differs from what a test presumes, the test is listed in one of two tables, per test and
architecture, with a one-line reason:

- `ADAPTED`: the mixin's test is replaced by `RegistryTesterMixin`'s version of it, which keeps every assertion that
  applies and checks the rest against the registry's description of the head (its named attention fields). Only the
  shape expectations of transformers' stacked encoders (per-layer maps `(B, heads, queries, keys)`, the embeddings
  as the first hidden state `(B, T, hidden)`) and a character model's vocabulary are adapted.
- `SKIPS`: the test does not run, for an architectural reason.

`TESTER_CONFIG` names the one config the tester changes, and why (ELMo's biLM is fine-tuned, as the training tests
presume).

Neither table may touch save/load, SDPA/eager parity, gradient checkpointing, resizing (other than ELMo's
character vocabulary, adapted), mismatched shapes, loss semantics or the output contract: `test_tables_leave_the_
contract_alone` enforces it.
"""

from __future__ import annotations

import functools
import re
import unittest

import torch

from hf_attn.registry.table import ARCHITECTURES
from tests.helpers import all_heads, attention_maps, make_inputs, make_labels, tiny_config
from tests.transformers_tests import load_transformers_tests

common = load_transformers_tests()

# The ids of every text but the first stay under `vocab_size - RESIZE_MARGIN`: transformers' resize test shrinks the
# vocabulary by 15 and clamps only `input_ids` and `decoder_input_ids` before its next forward.
RESIZE_MARGIN = 16

STACKED_ENCODERS = {"vaswani_transformer"}  # attention maps (B, heads, queries, keys) per layer, as transformers'
RECURRENT_LAYOUT = (
    "its maps are one distribution per query over its own keys, (B, …, Q, K) with no heads axis and not one per layer"
)

RETAIN_GRAD = "test_retain_grad_hidden_states_attentions"

# (test, architecture) -> why the registry's version of the test replaces the mixin's.
ADAPTED: dict[tuple[str, str], str] = {
    **{
        ("test_attention_outputs", name): RECURRENT_LAYOUT
        for name, architecture in ARCHITECTURES.items()
        if name not in STACKED_ENCODERS and architecture.attention_fields
    },
    **{
        ("test_hidden_states_output", name): "its hidden states are the outputs of each level (words, sentences, "
        "layers of a recurrence), each of its own shape, not (B, T, hidden) per layer"
        for name in ARCHITECTURES
        if name not in STACKED_ENCODERS
    },
    ("test_resize_tokens_embeddings", "elmo"): "it reads characters: resizing its word vocabulary resizes the "
    "biLM's softmax (and `vocab_size`); the character table (262 ids) is the same for every vocabulary",
}

# (test, architecture) -> why it does not run.
SKIPS: dict[tuple[str, str], str] = {
    (RETAIN_GRAD, "biblosa"): "its source2token attention is multi-dimensional, one distribution per feature "
    "(eq. 11): `sentence_attentions`, first in `attentions`, is their mean for display, which no output is made from",
    (RETAIN_GRAD, "lstmn"): "the recurrence is one autograd Function with a hand-written backward (the LSTMN's "
    "speed): its per-step states and attention maps come out of it as values, without a graph of their own",
    (RETAIN_GRAD, "sgm"): "the decoder runs step by step (each step reads the last one's label distribution, the "
    "global embedding of eq. 10–11): its read-outs and attention maps are stacked from the steps once used",
    ("test_inputs_embeds", "sgm"): "the decoder's input is a label embedding mixed with the last step's label "
    "distribution (eq. 10–11), which no `decoder_inputs_embeds` can stand for; the encoder takes `inputs_embeds`",
}

# architecture -> (config fields the tester sets, why). transformers' training tests presume every parameter trains
# (they even turn `requires_grad` back on): ELMo's task heads are tested fine-tuning the biLM, its frozen default
# being covered by tests/test_common.py and tests/layers/test_checkpointing.py.
TESTER_CONFIG: dict[str, tuple[dict, str]] = {
    "elmo": ({"freeze_elmo": False}, "the common tests train every parameter: the biLM is fine-tuned, not frozen"),
}

# What no table may cover (the list): save/load, SDPA/eager parity, gradient checkpointing, resizing,
# mismatched shapes, loss semantics, the output contract.
PROTECTED = re.compile(
    r"save|load|sdpa|eager|gradient_checkpointing|resize|mismatched|loss|outputs_equivalence|return_dict|problem_types"
    r"|training"
)
PROTECTED_ADAPTATIONS = {("test_resize_tokens_embeddings", "elmo")}


def test_tables_leave_the_contract_alone():
    for test, name in SKIPS:
        assert not PROTECTED.search(test), f"{test} may not be skipped ({name})"
    for test, name in ADAPTED:
        assert not PROTECTED.search(test) or (test, name) in PROTECTED_ADAPTATIONS, f"{test} may not be adapted"
    known = {name for name in dir(common.ModelTesterMixin) if name.startswith("test_")}
    for test, name in {**SKIPS, **ADAPTED}:
        assert name in ARCHITECTURES, f"unknown architecture {name}"
        assert test in known, f"{test} is no test of transformers' ModelTesterMixin"


@functools.cache
def head_settings(name: str, model_class: type) -> dict:
    """What a head sets in its config when built (SGM's classifier, an encoder alone, is no encoder-decoder): one
    tiny model per head, not one per test."""
    built = model_class(tiny_config(ARCHITECTURES[name])).config
    return {name: getattr(built, name) for name in ("is_encoder_decoder", "problem_type")}


class RegistryModelTester:
    """Describes one head to transformers' mixins: its tiny config and inputs of the head's input kind, 3 examples of
    7 tokens, the second right-padded to 5."""

    batch_size = 3
    seq_length = 7
    is_training = True

    def __init__(self, parent: unittest.TestCase, architecture, head) -> None:
        self.parent, self.architecture, self.head = parent, architecture, head
        config = self.get_config()
        self.vocab_size = config.vocab_size
        # Read where they exist (the Transformer's attribute map); the adapted tests do not use them.
        self.hidden_size = getattr(config, "hidden_size", None)
        self.num_hidden_layers = getattr(config, "num_hidden_layers", None)
        self.num_attention_heads = getattr(config, "num_attention_heads", None)

    def get_config(self):
        config = tiny_config(self.architecture, **TESTER_CONFIG.get(self.architecture.name, ({}, ""))[0])
        for name, value in head_settings(self.architecture.name, self.head.model_class).items():
            setattr(config, name, value)
        return config

    def prepare_config_and_inputs_for_common(self):
        config = self.get_config()
        lengths = [self.seq_length, self.seq_length - 2, self.seq_length]
        inputs = make_inputs(self.head, config, lengths)
        for name, value in inputs.items():
            if name.endswith("input_ids") and name not in ("input_ids", "decoder_input_ids"):
                inputs[name] = value.clamp(max=config.vocab_size - RESIZE_MARGIN)
        return config, inputs


class RegistryTesterMixin:
    """The registry's versions of the adapted tests, and its labels (`_prepare_for_class`)."""

    architecture = head = None

    def setUp(self) -> None:
        self.model_tester = RegistryModelTester(self, self.architecture, self.head)

    def _prepare_for_class(self, inputs_dict, model_class, return_labels=False):
        # The mixin finds a class's labels from transformers' own Auto mappings, which list none of ours: labels of
        # the head's label kind instead.
        inputs = super()._prepare_for_class(inputs_dict, model_class, return_labels=False)
        if return_labels:
            tensors = {name: value for name, value in inputs.items() if torch.is_tensor(value)}
            inputs["labels"] = make_labels(self.head, self.model_tester.get_config(), tensors)
        return inputs

    def _adapted(self, test: str) -> bool:
        return (test, self.architecture.name) in ADAPTED

    def _forward(self, config, inputs, **flags):
        model = self.head.model_class._from_config(config, attn_implementation="eager").eval()
        with torch.no_grad():
            return model(**self._prepare_for_class({**inputs, **flags}, self.head.model_class))

    def test_attention_outputs(self):
        if not self._adapted("test_attention_outputs") or not self.has_attentions:
            return super().test_attention_outputs()
        config, inputs = self.model_tester.prepare_config_and_inputs_for_common()
        config.return_dict = True
        field = "cross_attentions" if config.is_encoder_decoder else "attentions"
        by_argument = self._forward(config, inputs, output_attentions=True, output_hidden_states=False)
        maps = attention_maps(self.architecture, by_argument, inputs)
        self.assertGreater(len(maps), 0)
        for name, weights, mask in maps:  # over the keys of the input mask the registry names (test_common.py
            self.assertEqual(weights.shape[-1], mask.shape[-1], name)  # checks each is a distribution over them)
        returned = by_argument[field]
        returned = returned if isinstance(returned, tuple) else (returned,)
        named = [weights for _, weights, _ in maps]
        for weights in returned:  # `attentions` holds named maps only
            self.assertTrue(any(weights is other for other in named), f"`{field}` holds a map no field names")

        config.output_attentions = True  # the same maps through the config
        by_config = self._forward(config, inputs, output_hidden_states=False)
        self.assertEqual(len(attention_maps(self.architecture, by_config, inputs)), len(maps))
        out_len = len(by_config)

        both = self._forward(config, inputs, output_attentions=True, output_hidden_states=True)
        added = 2 if config.is_encoder_decoder else 1  # hidden states add their field(s) and nothing else
        self.assertEqual(len(both), out_len + added)
        self.assertEqual(len(attention_maps(self.architecture, both, inputs)), len(maps))

    def test_hidden_states_output(self):
        if not self._adapted("test_hidden_states_output"):
            return super().test_hidden_states_output()
        config, inputs = self.model_tester.prepare_config_and_inputs_for_common()
        fields = ("hidden_states",)
        if config.is_encoder_decoder:
            fields = ("encoder_hidden_states", "decoder_hidden_states")
        by_argument = self._forward(config, inputs, output_hidden_states=True)
        config.output_hidden_states = True
        by_config = self._forward(config, inputs)
        for field in fields:
            for outputs in (by_argument, by_config):
                states = outputs[field]
                self.assertIsInstance(states, tuple, field)
                self.assertGreaterEqual(len(states), 1, field)
                for state in states:
                    self.assertEqual(state.shape[0], self.model_tester.batch_size, field)
                    self.assertTrue(state.is_floating_point(), field)
            self.assertEqual(len(by_argument[field]), len(by_config[field]), field)
            for one, other in zip(by_argument[field], by_config[field], strict=True):
                self.assertEqual(one.shape, other.shape, field)
        config.output_hidden_states = False
        self.assertTrue(all(self._forward(config, inputs).get(field) is None for field in fields))

    def test_resize_tokens_embeddings(self):
        if not self._adapted("test_resize_tokens_embeddings"):
            return super().test_resize_tokens_embeddings()
        config, inputs = self.model_tester.prepare_config_and_inputs_for_common()
        model = self.head.model_class(config)
        vocabulary = config.vocab_size
        characters = model.get_input_embeddings().weight.detach().clone()
        softmax = model.get_output_embeddings()
        before = None if softmax is None else softmax.weight.detach().clone()
        for size in (vocabulary + 10, vocabulary - 15):
            returned = model.resize_token_embeddings(size)
            self.assertIs(returned, model.get_input_embeddings())
            self.assertEqual(model.config.vocab_size, size)
            torch.testing.assert_close(returned.weight, characters)  # the character table stays
            if before is not None:  # the softmax follows the vocabulary, keeping the rows it had
                self.assertEqual(model.get_output_embeddings().weight.shape[0], size)
                kept = min(size, vocabulary)
                torch.testing.assert_close(model.get_output_embeddings().weight[:kept], before[:kept])
            labelled = self._prepare_for_class(inputs, self.head.model_class, return_labels=True)
            if before is not None:  # the new last word is a label the model can score
                labelled["labels"] = labelled["labels"].masked_fill(labelled["labels"] >= 0, size - 1)
            output = model(**labelled)
            self.assertTrue(torch.isfinite(output.loss))
        model.resize_token_embeddings(vocabulary + 13, pad_to_multiple_of=64)
        self.assertEqual(model.config.vocab_size, 64 * -(-(vocabulary + 13) // 64))


def make_test_class(architecture, head) -> type[unittest.TestCase]:
    bases = [RegistryTesterMixin, common.ModelTesterMixin]
    if head.model_class.can_generate():
        bases.append(common.GenerationTesterMixin)
    attributes = {
        "architecture": architecture,
        "head": head,
        "all_model_classes": (head.model_class,),
        "is_encoder_decoder": bool(head_settings(architecture.name, head.model_class)["is_encoder_decoder"]),
        "has_attentions": bool(head.attention_fields),
        "__module__": __name__,
    }
    for test, name in SKIPS:
        if name == architecture.name:
            attributes[test] = unittest.skip(SKIPS[test, name])(lambda self: None)
    name = f"Test{head.model_class.__name__}"
    return type(name, (*bases, unittest.TestCase), {**attributes, "__qualname__": name})


for _param in all_heads():
    _case = make_test_class(*_param.values)
    globals()[_case.__name__] = _case
del _param, _case

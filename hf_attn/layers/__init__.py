"""Paper-agnostic primitives. Each model folder's ``common.py`` copies what its model uses (``# Copied from
hf_attn.layers...``) so that a saved model's code is self-contained for ``trust_remote_code``;
``python -m hf_attn.utils.copies`` keeps the copies exact."""

from .attention import AdditiveAttentionPooling
from .hierarchy import run_rnn_over_sentences, run_rnn_skipping_masked
from .losses import classification_loss, token_cross_entropy
from .masking import masked_softmax
from .positions import sinusoidal_positions
from .rnn import PackedBiRNN
from .sequences import reverse_padded, shift_tokens_right
from .validation import check_token_inputs

__all__ = [
    "AdditiveAttentionPooling",
    "PackedBiRNN",
    "check_token_inputs",
    "classification_loss",
    "masked_softmax",
    "reverse_padded",
    "run_rnn_over_sentences",
    "run_rnn_skipping_masked",
    "shift_tokens_right",
    "sinusoidal_positions",
    "token_cross_entropy",
]

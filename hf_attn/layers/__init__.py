"""Paper-agnostic primitives. A model file imports each from the module that defines it
(``from hf_attn.layers.masking import masked_softmax``); ``save_pretrained`` writes those modules into the saved
folder (``hf_attn.utils.remote_code``), so that it loads with ``trust_remote_code`` where hf_attn is not installed."""

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

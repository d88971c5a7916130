"""Paper-agnostic primitives. Model files copy what they use (``# Copied from hf_attn.layers...``) so that a saved
model's code is self-contained for ``trust_remote_code``; ``python -m hf_attn.utils.copies`` keeps the copies exact."""

from .attention import AdditiveAttentionPooling
from .masking import masked_softmax
from .positions import sinusoidal_positions
from .rnn import PackedBiRNN
from .validation import check_token_inputs

__all__ = ["AdditiveAttentionPooling", "PackedBiRNN", "check_token_inputs", "masked_softmax", "sinusoidal_positions"]

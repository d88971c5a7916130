"""Bi-Directional Block Self-Attention for Fast and Memory-Efficient Sequence Modeling (Shen et al., ICLR 2018).

The folder holds the architecture: its config (`configuration_biblosa.py`), its model (`modeling_biblosa.py`) and
its registry row (`architecture.py`, read by `hf_attn.registry.table`). This file imports nothing, so that the config
loads without the model (Auto registration needs only the config).
"""

# What `import hf_attn` exposes of this architecture, each name found in the `__all__` of the folder's module
# that defines it (`hf_attn.registry.index.public_names`): nothing is imported here.
__all__ = [
    "BiBlosaConfig",
    "BiBlosaForPairClassification",
    "BiBlosaForSequenceClassification",
    "BiBlosaModel",
    "block_length_for_lengths",
    "original_block_length",
]

"""Attention Is All You Need (Vaswani et al., NeurIPS 2017).

The folder holds the architecture: its config (`configuration_vaswani_transformer.py`), its model
(`modeling_vaswani_transformer.py`) and its registry row (`architecture.py`, read by `hf_attn.registry`). This file
imports nothing, so that the config loads without the model (Auto registration needs only the config).
"""

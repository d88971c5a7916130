"""A Structured Self-attentive Sentence Embedding (Lin et al., ICLR 2017).

The folder holds the architecture: its config (`configuration_lin_self_attentive.py`), its model
(`modeling_lin_self_attentive.py`) and its registry row (`architecture.py`, read by `hf_attn.registry`). This file
imports nothing, so that the config loads without the model (Auto registration needs only the config).
"""

"""Bi-Directional Block Self-Attention for Fast and Memory-Efficient Sequence Modeling (Shen et al., ICLR 2018).

The folder holds the architecture: its config (`configuration_biblosa.py`), its model (`modeling_biblosa.py`) and
its registry row (`architecture.py`, read by `hf_attn.registry`). This file imports nothing, so that the config
loads without the model (Auto registration needs only the config).
"""

"""Deep Short Text Classification with Knowledge Powered Attention (Chen et al., AAAI 2019).

The folder holds the architecture: its config (`configuration_stcka.py`), its model (`modeling_stcka.py`) and its
registry row (`architecture.py`, read by `hf_attn.registry`). This file imports nothing, so that the config loads
without the model (Auto registration needs only the config).
"""

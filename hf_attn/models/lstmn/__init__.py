"""Long Short-Term Memory-Networks for Machine Reading (Cheng et al., EMNLP 2016).

The folder holds the architecture: its config (`configuration_lstmn.py`), its model (`modeling_lstmn.py`) and its
registry row (`architecture.py`, read by `hf_attn.registry`). This file imports nothing, so that the config loads
without the model (Auto registration needs only the config).
"""

"""SGM: Sequence Generation Model for Multi-Label Classification (Yang et al., COLING 2018).

The folder holds the architecture: its config (`configuration_sgm.py`), its model (`modeling_sgm.py`) and its
registry row (`architecture.py`, read by `hf_attn.registry`). This file imports nothing, so that the config loads
without the model (Auto registration needs only the config).
"""

"""Deep contextualized word representations (Peters et al., NAACL 2018).

The folder holds the architecture: its config (`configuration_elmo.py`), its model (`modeling_elmo.py`) and its
registry row (`architecture.py`, read by `hf_attn.registry`). This file imports nothing, so that the config loads
without the model (Auto registration needs only the config).
"""

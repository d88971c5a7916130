"""SGM: Sequence Generation Model for Multi-Label Classification (Yang et al., COLING 2018).

The folder holds the architecture: its config (`configuration_sgm.py`), its model (`modeling_sgm.py`) and its
registry row (`architecture.py`, read by `hf_attn.registry.table`). This file imports nothing, so that the config loads
without the model (Auto registration needs only the config).
"""

# What `import hf_attn` exposes of this architecture, each name found in the `__all__` of the folder's module
# that defines it (`hf_attn.registry.index.public_names`): nothing is imported here.
__all__ = [
    "SgmConfig",
    "SgmForMultiLabelClassification",
    "SgmForMultiLabelGeneration",
    "SgmModel",
    "sgm_original_beam_search",
]

"""Hierarchical Attention Networks for Document Classification (Yang et al., NAACL 2016).

The folder holds the architecture: its config (`configuration_han.py`), its model (`modeling_han.py`) and its
registry row (`architecture.py`, read by `hf_attn.registry.table`). This file imports nothing, so that the config loads
without the model (Auto registration needs only the config).
"""

# What `import hf_attn` exposes of this architecture, each name found in the `__all__` of the folder's module
# that defines it (`hf_attn.registry.index.public_names`): nothing is imported here.
__all__ = ["HanConfig", "HanForDocumentClassification", "HanModel"]

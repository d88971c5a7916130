"""Converts a checkpoint of the ExplorerFreda PyTorch port of Lin et al. (2017) to an hf_attn model.

The converter lives in the model's folder,
`hf_attn/models/lin_self_attentive/convert_lin_self_attentive_original_to_hf.py` (its docstring says what it reads
and checks), and runs from an installed hf_attn as `hf-attn convert lin_self_attentive ...`; this script runs it
from a checkout: `python conversion/convert_lin_self_attentive_original_to_hf.py --help`.
"""

from hf_attn.models.lin_self_attentive.convert_lin_self_attentive_original_to_hf import main

if __name__ == "__main__":
    main()

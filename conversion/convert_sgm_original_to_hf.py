"""Converts a checkpoint of the original SGM code (lancopku/SGM) to an hf_attn `SgmForMultiLabelGeneration`.

The converter lives in the model's folder, `hf_attn/models/sgm/convert_sgm_original_to_hf.py` (its docstring says
what it reads and checks), and runs from an installed hf_attn as `hf-attn convert sgm ...`; this script runs it from
a checkout: `python conversion/convert_sgm_original_to_hf.py --help`.
"""

from hf_attn.models.sgm.convert_sgm_original_to_hf import main

if __name__ == "__main__":
    main()

"""Converts a bilm-tf ELMo (`options.json` + `weights.hdf5`) to an hf_attn `ElmoModel`.

The converter lives in the model's folder, `hf_attn/models/elmo/convert_elmo_original_to_hf.py` (its docstring says
what it reads and checks), and runs from an installed hf_attn as `hf-attn convert elmo ...`; this script runs it
from a checkout: `python conversion/convert_elmo_original_to_hf.py --help`.
"""

from hf_attn.models.elmo.convert_elmo_original_to_hf import main

if __name__ == "__main__":
    main()

"""Converts the variables of the original Bi-BloSAN code (taoshen58/BiBloSA, TensorFlow 1) to hf_attn.

The converter lives in the model's folder, `hf_attn/models/biblosa/convert_biblosa_original_to_hf.py` (its docstring
says what it reads and checks), and runs from an installed hf_attn as `hf-attn convert biblosa ...`; this script
runs it from a checkout: `python conversion/convert_biblosa_original_to_hf.py --help`.
"""

from hf_attn.models.biblosa.convert_biblosa_original_to_hf import main

if __name__ == "__main__":
    main()

"""Converts Transformer checkpoints of other implementations to hf_attn's `VaswaniTransformerForConditionalGeneration`.

The converter lives in the model's folder, `hf_attn/models/vaswani_transformer/convert_vaswani_transformer_to_hf.py`
(its docstring says what it reads and checks), and runs from an installed hf_attn as `hf-attn convert
vaswani_transformer ...`; this script runs it from a checkout: `python
conversion/convert_vaswani_transformer_to_hf.py --help`.
"""

from hf_attn.models.vaswani_transformer.convert_vaswani_transformer_to_hf import main

if __name__ == "__main__":
    main()

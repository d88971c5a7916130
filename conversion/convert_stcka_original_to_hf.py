"""Converts a checkpoint of the most used unofficial STCKA code (AIRobotZhang/STCKA) to an hf_attn
`StckaForSequenceClassification`.

The converter lives in the model's folder, `hf_attn/models/stcka/convert_stcka_original_to_hf.py` (its docstring
says what it reads and checks), and runs from an installed hf_attn as `hf-attn convert stcka ...`; this script runs
it from a checkout: `python conversion/convert_stcka_original_to_hf.py --help`.
"""

from hf_attn.models.stcka.convert_stcka_original_to_hf import main

if __name__ == "__main__":
    main()

"""Converts a checkpoint of the original Proto-HATT code (thunlp/HATT-Proto) to an hf_attn
`ProtoHattForFewShotClassification` (or, for the repository's plain `Proto` model, a
`ProtoHattProtoNetForFewShotClassification`).

The converter lives in the model's folder, `hf_attn/models/proto_hatt/convert_proto_hatt_original_to_hf.py` (its
docstring says what it reads and checks), and runs from an installed hf_attn as `hf-attn convert proto_hatt ...`;
this script runs it from a checkout: `python conversion/convert_proto_hatt_original_to_hf.py --help`.
"""

from hf_attn.models.proto_hatt.convert_proto_hatt_original_to_hf import main

if __name__ == "__main__":
    main()

"""Converts a checkpoint of the original AttentionXML code (yourh/AttentionXML) to an hf_attn
`AttentionXmlForSequenceClassification`.

The converter lives in the model's folder, `hf_attn/models/attention_xml/convert_attention_xml_original_to_hf.py`
(its docstring says what it reads and checks), and runs from an installed hf_attn as `hf-attn convert attention_xml
...`; this script runs it from a checkout: `python conversion/convert_attention_xml_original_to_hf.py --help`.
"""

from hf_attn.models.attention_xml.convert_attention_xml_original_to_hf import main

if __name__ == "__main__":
    main()

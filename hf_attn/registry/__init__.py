"""The registry, as transformers keeps `models/auto/`: the table of every architecture (`table`: `ARCHITECTURES`,
`get_architecture`, built from the rows the model folders declare), what a row names (`row`), the rows read from
their source without torch (`index`: `hf-attn list`, `hf-attn train --help`) and the Auto registration (`auto`).

This package imports nothing itself: a folder's row imports `hf_attn.registry.row`, and the table imports the rows.
"""

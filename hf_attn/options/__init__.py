"""The options of `hf-attn train` and every check of how they combine: `arguments` (hf_attn's own options and the
command line's parser, torch-free, so that `--help` answers at once), `training_arguments` (transformers'
`TrainingArguments` with hf_attn's defaults), `checks` (each refused value or combination, in one line) and `reading`
(the command line or keywords read once, merged with a recipe, checked)."""

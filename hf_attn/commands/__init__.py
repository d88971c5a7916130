"""The `hf-attn` commands, one module each with its own options: `train` (with `train_data`, the data step of a
run), `evaluate`, `predict`, `visualize`, `card`, `push`, `verify`, `convert`, `demo` and `catalog` (`list`,
`recipes`). `hf_attn.cli` dispatches to them; a command module loads torch only when it runs, so that `--help`
answers at once."""

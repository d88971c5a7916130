"""The `hf-attn` commands, one module each with its own options: `train` (its two steps in `hf_attn.training`),
`evaluate`, `predict`, `visualize`, `card`, `push`, `verify`, `convert`, `demo`, `list` and `recipes`.
`hf_attn.cli` dispatches to them and imports a command's module only when that command runs, so that `--help` and
`list` answer without torch (`train --help` from the torch-free `hf_attn.options.arguments`)."""

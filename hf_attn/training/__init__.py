"""A training run's two steps, as `hf-attn train` takes them (`hf_attn.commands.train` calls each once):
`preparation` (the task data, its shape and head, the checkpoint to go on from, the vocabulary: a `Preparation`) and
`fitting` (the config, the encoded splits, the model, the shape's `Trainer`, the held-out metrics and the training
record: `Fitted`)."""

"""One folder per architecture; each folder imports only torch, transformers and its own files."""

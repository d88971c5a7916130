"""One folder per architecture: its config and model (which import only torch, transformers, their own folder's
files and hf_attn's primitives, and travel as the saved folder's code), its registry row (`architecture.py`) and,
where it has them, its views, kinds and converter."""

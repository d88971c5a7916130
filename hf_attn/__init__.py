"""hf_attn: the classic attention architectures of NLP as native Hugging Face models.

`import hf_attn` registers every architecture with the transformers Auto classes and exposes each one's config,
models and extra public objects, all read from the registry rows the model folders declare (`hf_attn.registry`).
"""

from .registry import ARCHITECTURES, get_architecture, list_models, register_all

__version__ = "0.1.0"

register_all()

_PUBLIC = {obj.__name__: obj for architecture in ARCHITECTURES.values() for obj in architecture.public_objects}
globals().update(_PUBLIC)

__all__ = ["ARCHITECTURES", "get_architecture", "list_models", *sorted(_PUBLIC)]

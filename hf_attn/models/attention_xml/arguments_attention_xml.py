"""AttentionXML's own `hf-attn visualize` option (`Architecture.view_arguments`): how many labels' attention rows its
picture draws (`visualization_attention_xml.top_labels_view`'s `top_k`). A plain dataclass, so that `hf-attn
visualize --help` lists it without loading torch."""

from __future__ import annotations

from dataclasses import dataclass, field

from hf_attn.registry.row import ViewArguments, option_help

__all__ = ["AttentionXmlViewArguments"]


@dataclass
class AttentionXmlViewArguments(ViewArguments):
    """The labels drawn: the `top_k` best scored, each with its attention over the text."""

    top_k: int | None = field(default=None, metadata=option_help("AttentionXML: how many labels (default 5)"))

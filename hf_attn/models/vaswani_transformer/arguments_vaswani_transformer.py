"""The Transformer's own `hf-attn visualize` options (`Architecture.view_arguments`): which heads and layers of its
encoder, decoder and cross attention the picture draws (`visualization_vaswani_transformer.transformer_view`'s
`heads` and `layers`). A plain dataclass, so that `hf-attn visualize --help` lists them without loading torch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hf_attn.registry.row import ViewArguments, option_help

__all__ = ["VaswaniTransformerViewArguments"]


@dataclass
class VaswaniTransformerViewArguments(ViewArguments):
    """`--heads mean|all|0,3` (the mean of the h heads, each head, or the heads named) and `--layers 0 2`."""

    heads: str | None = field(
        default=None, metadata=option_help("Transformer: mean (default), all, or head indices 0,3")
    )
    layers: list[int] | None = field(default=None, metadata=option_help("Transformer: layer indices (default all)"))

    def view_options(self) -> dict[str, Any]:
        options = super().view_options()
        if self.heads not in (None, "mean", "all"):
            try:
                options["heads"] = [int(index) for index in self.heads.split(",")]
            except ValueError:
                raise ValueError(f"--heads must be mean, all or head indices like 0,3; got {self.heads!r}.") from None
        return options

"""STCKA's own `hf-attn train` options (`Architecture.arguments`): where each text's concept set comes from (Chen et
al., AAAI 2019, §3.1: an isA knowledge base links a text's entities to their concepts), and the paper's ablation
without concepts. A plain dataclass, so that `hf-attn train --help` lists it without loading torch; the knowledge
itself (`ConceptSource`) loads only when a vocabulary is trained.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from hf_attn.registry.row import ArchitectureArguments, TokenizerColumn, option_help

__all__ = ["StckaArguments"]


@dataclass
class StckaArguments(ArchitectureArguments):
    """Knowledge (STCKA): each text's concept set, from a knowledge base (`--concepts`, or the synthetic task's own),
    from a column of the data (`--concept_column`), or none (`--no_concepts`)."""

    _argument_group_name: ClassVar[str] = "STCKA options (--arch stcka)"

    concepts: str | None = field(
        default=None,
        metadata=option_help("an isA knowledge base (entity<TAB>concept<TAB>score lines, or JSON) to link concepts"),
    )
    concept_column: str | None = field(
        default=None, metadata=option_help("the column holding each text's concepts (a list, or space-separated)")
    )
    no_concepts: bool = field(
        default=False,
        metadata=option_help("STCKA without concepts (the paper's ablation): every text's concept set is empty"),
    )
    max_concepts: int | None = field(default=None, metadata=option_help("keep a text's best-scored concepts only"))
    min_concept_score: float = field(default=0.0, metadata=option_help("drop concepts scored below this"))

    def columns(self) -> list[TokenizerColumn]:
        """The concept column, read by the tokenizer's `concepts=` (`ConceptTokenizerFast.__call__`)."""
        if not self.concept_column or self.no_concepts:
            return []
        return [TokenizerColumn("concept_column", "concepts", self.concept_column)]

    def tokenizer_knowledge(self, architecture: Any, data: Any) -> dict[str, Any]:
        """The concept tokenizer's knowledge: the knowledge base of `--concepts` (or the task's own,
        `data.resources["knowledge_base"]`), the texts' `--concept_column`, or with `--no_concepts` an empty
        knowledge base (every concept set empty). Errors name the flags."""
        from .tokenization_stcka import ConceptSource

        if self.no_concepts:
            if self.concepts or self.concept_column:
                raise ValueError("--no_concepts trains without concepts: drop --concepts and --concept_column.")
            return {"concept_source": ConceptSource({}), "concept_sets": None}
        knowledge_base = self.concepts or data.resources.get("knowledge_base")
        column = data.tokenizer_columns.get("concepts")
        if not knowledge_base and not column:
            raise ValueError(
                f"{architecture.display_name} reads each text's concepts: pass --concepts FILE (an isA knowledge "
                "base, entity<TAB>concept<TAB>score lines or JSON), --concept_column COLUMN (each text's concepts), "
                "or --no_concepts (the paper's ablation without concepts)."
            )
        source = None
        if knowledge_base:
            source = ConceptSource.from_file(knowledge_base, self.max_concepts, self.min_concept_score)
        return {"concept_source": source, "concept_sets": data.train[column] if column else None}

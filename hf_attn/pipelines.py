"""A translation pipeline for sequence-to-sequence models.

transformers 5 removed its `translation` and `text2text-generation` pipelines (MIGRATION_GUIDE_V5), and
`pipeline()` refuses those task names. `import hf_attn` registers this one as `hf-attn-translation`:

    translator = pipeline("hf-attn-translation", model=model, tokenizer=tokenizer)
    translator("the small cat sees a house", num_beams=4)  # [{"translation_text": "..."}]

Keyword arguments go to `model.generate` (the model's saved generation config applies otherwise).
"""

from __future__ import annotations

from typing import Any

from transformers import AutoModelForSeq2SeqLM, Pipeline
from transformers.pipelines import PIPELINE_REGISTRY

TRANSLATION_TASK = "hf-attn-translation"


class Seq2SeqTranslationPipeline(Pipeline):
    """Tokenise a source sentence, `generate()`, decode: `{"translation_text": ...}` per input."""

    def _sanitize_parameters(self, **generate_kwargs: Any) -> tuple[dict, dict, dict]:
        return {}, generate_kwargs, {}

    def preprocess(self, text: str) -> dict:
        return self.tokenizer(text, return_tensors="pt", truncation=True)

    def _forward(self, model_inputs: dict, **generate_kwargs: Any) -> dict:
        return {"output_ids": self.model.generate(**model_inputs, **generate_kwargs)}

    def postprocess(self, model_outputs: dict) -> dict[str, str]:
        text = self.tokenizer.decode(model_outputs["output_ids"][0], skip_special_tokens=True)
        return {"translation_text": text}


def register_pipelines() -> None:
    """Registers `hf-attn-translation` with transformers' pipeline registry (once)."""
    if TRANSLATION_TASK not in PIPELINE_REGISTRY.get_supported_tasks():
        PIPELINE_REGISTRY.register_pipeline(
            TRANSLATION_TASK, pipeline_class=Seq2SeqTranslationPipeline, pt_model=AutoModelForSeq2SeqLM, type="text"
        )

"""hf_attn's pipelines, registered with transformers by `import hf_attn` (as `transformers.pipelines` loads).

`hf-attn-translation`: transformers 5 removed its `translation` and `text2text-generation` pipelines
(MIGRATION_GUIDE_V5), and `pipeline()` refuses those task names:

    translator = pipeline("hf-attn-translation", model=model, tokenizer=tokenizer)
    translator("the small cat sees a house", num_beams=4)  # [{"translation_text": "..."}]

Keyword arguments go to `model.generate` (the model's saved generation config applies otherwise).

`hf-attn-few-shot`: a few-shot classifier (Proto-HATT, HAPN) labels texts among the classes of a support set
given with the call, classes it may never have seen in training:

    classifier = pipeline("hf-attn-few-shot", model="path/or/hub-id")
    classifier("a text", support_texts=[...], support_labels=[...])  # {"label": ..., "score": ..., "scores": {...}}

A relation model also takes each text's entities: pass `{"text": ..., "head": i, "tail": j}` (word indices) and
`support_entities=[(head, tail), ...]`. `output_attentions=True` adds the maps the model has.

`token-classification` over characters: transformers' pipeline names each token by its id, one int per token;
ELMo's ids are a word's characters `(T, C)`. `register_pipelines` sets the task's class to
`CharacterAwareTokenClassificationPipeline`, transformers' own with one change: where a token's ids are a row of
characters, its word is read from the text by its offsets (each ELMo token is a whole word, never a subword). For
every other model it is transformers' pipeline, unchanged.

Batched pipelines (`pipeline(..., batch_size=8)`) give what `batch_size=1` gives, for every hf_attn head. transformers'
batching pads each input along its second axis only, which fails on inputs with more padded axes: a document's
`(1, sentences, words)` ids, a word's characters `(1, words, characters)`. `register_pipelines` extends its padding
to every axis for such inputs (`pad_every_axis`); 2-D inputs are padded exactly as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from transformers import AutoConfig, AutoModelForSeq2SeqLM, Pipeline, TokenClassificationPipeline
from transformers.pipelines import PIPELINE_REGISTRY
from transformers.pipelines import base as pipeline_base

TRANSLATION_TASK = "hf-attn-translation"
FEW_SHOT_TASK = "hf-attn-few-shot"
_TOKEN_CLASSIFICATION_PATH = f"{TokenClassificationPipeline.__module__}.{TokenClassificationPipeline.__name__}"
# What `register_pipelines` was given: the few-shot heads a saved config may name, imported when a pipeline loads one.
_FEW_SHOT_HEADS: list[Callable[[], Sequence[type]]] = []


def _few_shot_heads() -> list[type]:
    return [head for heads in _FEW_SHOT_HEADS for head in heads()]


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


class FewShotModelLoader:
    """What `pipeline("hf-attn-few-shot", model=path)` loads a model with: transformers has no few-shot Auto class,
    so the saved config's `architectures` names the hf_attn head, looked up among the few-shot heads registered
    (`register_pipelines`)."""

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: Any, **kwargs: Any) -> Any:
        kwargs.pop("_from_pipeline", None)
        config = AutoConfig.from_pretrained(pretrained_model_name_or_path)
        heads = {model_class.__name__: model_class for model_class in _few_shot_heads()}
        names = [name for name in config.architectures or [] if name in heads]
        if not names:
            raise ValueError(
                f"{pretrained_model_name_or_path} is not a few-shot model (its architectures: "
                f"{config.architectures}); the {FEW_SHOT_TASK} pipeline takes {', '.join(sorted(heads))}."
            )
        return heads[names[0]].from_pretrained(pretrained_model_name_or_path, **kwargs)


class FewShotClassificationPipeline(Pipeline):
    """Labels each text among the classes of the support set passed with the call (`model.predict`):
    `{"label", "score", "scores"}` per text (+ `instance_attention`, `word_attention` with `output_attentions`)."""

    def _sanitize_parameters(
        self,
        support_texts: list[str] | None = None,
        support_labels: list[Any] | None = None,
        support_entities: list[tuple[int, int]] | None = None,
        output_attentions: bool | None = None,
        **kwargs: Any,
    ) -> tuple[dict, dict, dict]:
        forward = {
            "support_texts": support_texts,
            "support_labels": support_labels,
            "support_entities": support_entities,
            "output_attentions": output_attentions,
        }
        return {}, {name: value for name, value in forward.items() if value is not None}, {}

    def preprocess(self, inputs: str | dict[str, Any]) -> dict[str, Any]:
        if isinstance(inputs, dict):
            if "text" not in inputs:
                raise ValueError("A few-shot input is a text, or a dict with `text` (and `head`, `tail`).")
            entities = (inputs["head"], inputs["tail"]) if "head" in inputs else None
            return {"text": inputs["text"], "entities": entities}
        return {"text": inputs, "entities": None}

    def _forward(
        self,
        model_inputs: dict[str, Any],
        support_texts=None,
        support_labels=None,
        support_entities=None,
        output_attentions: bool = False,
    ) -> dict[str, Any]:
        if support_texts is None or support_labels is None:
            raise ValueError("The hf-attn-few-shot pipeline needs `support_texts=` and `support_labels=`.")
        # One query, or a batch of them (`batch_size` > 1: the pipeline's collation gives each field as a list).
        batched = isinstance(model_inputs["text"], list)
        texts = model_inputs["text"] if batched else [model_inputs["text"]]
        entities = model_inputs["entities"] if batched else [model_inputs["entities"]]
        results = self.model.predict(
            support_texts,
            support_labels,
            texts,
            self.tokenizer,
            support_entities=support_entities,
            query_entities=None if all(pair is None for pair in entities) else entities,
            output_attentions=True,
        )
        if not output_attentions:
            results = [
                {key: value for key, value in result.items() if key in ("label", "scores")} for result in results
            ]
        if not batched:
            return results[0]
        return {key: [result[key] for result in results] for key in results[0]}  # unbatched by the pipeline

    def postprocess(self, model_outputs: dict[str, Any]) -> dict[str, Any]:
        return {
            "label": model_outputs["label"],
            "score": model_outputs["scores"][model_outputs["label"]],
            **{key: value for key, value in model_outputs.items() if key != "label"},
        }


def pad_every_axis(
    items: list[dict[str, Any]], key: str, padding_value: int | float, padding_side: str
) -> torch.Tensor | list:
    """transformers' pipeline padding (`transformers.pipelines.base._pad`), extended to inputs of rank ≥ 3 whose
    later axes differ from example to example (documents' words, words' characters): every axis is padded to the
    batch's longest, on the tokenizer's padding side. Everything else is padded by transformers' own function."""
    first = items[0][key]
    if (
        not isinstance(first, torch.Tensor)
        or first.ndim < 3
        or key in {"pixel_values", "image", "input_features"}
        or all(item[key].shape[2:] == first.shape[2:] for item in items)
    ):
        return _TRANSFORMERS_PAD(items, key, padding_value, padding_side)
    sizes = [max(item[key].shape[axis] for item in items) for axis in range(1, first.ndim)]
    batch = torch.full([len(items), *sizes], padding_value, dtype=first.dtype)
    for row, item in enumerate(items):
        value = item[key][0]
        if padding_side == "left":
            batch[row][tuple(slice(size - extent, size) for size, extent in zip(sizes, value.shape, strict=True))] = (
                value
            )
        else:
            batch[row][tuple(slice(0, extent) for extent in value.shape)] = value
    return batch


_TRANSFORMERS_PAD = getattr(pipeline_base._pad, "transformers_pad", pipeline_base._pad)
pad_every_axis.transformers_pad = _TRANSFORMERS_PAD  # type: ignore[attr-defined]


class CharacterAwareTokenClassificationPipeline(TokenClassificationPipeline):
    """transformers' token-classification pipeline, also for models whose ids are characters per token (module
    docstring)."""

    def gather_pre_entities(
        self,
        sentence: str,
        input_ids: Any,
        scores: Any,
        offset_mapping: Any,
        special_tokens_mask: Any,
        aggregation_strategy: Any,
        **kwargs: Any,
    ) -> list[dict]:
        if getattr(input_ids, "ndim", 1) < 2:  # one id per token: transformers' own
            return super().gather_pre_entities(
                sentence, input_ids, scores, offset_mapping, special_tokens_mask, aggregation_strategy, **kwargs
            )
        if offset_mapping is None:
            raise ValueError("A character-level token classifier needs the tokenizer's `offset_mapping`.")
        entities = []
        for index, token_scores in enumerate(scores):
            if special_tokens_mask[index]:
                continue
            start, end = (int(value) for value in offset_mapping[index])
            entities.append(
                {
                    "word": sentence[start:end],
                    "scores": token_scores,
                    "start": start,
                    "end": end,
                    "index": index,
                    "is_subword": False,  # a whole word per token
                }
            )
        return entities


def register_pipelines(few_shot_heads: Callable[[], Sequence[type]] = list) -> None:
    """Registers `hf-attn-translation` and `hf-attn-few-shot` with transformers' pipeline registry (once), and the
    extensions of its batching and token classification (module docstring). `few_shot_heads` gives the model classes
    the few-shot pipeline loads (called when it loads one). `hf_attn.registry.auto` calls it when
    `transformers.pipelines` loads."""
    if few_shot_heads not in _FEW_SHOT_HEADS:
        _FEW_SHOT_HEADS.append(few_shot_heads)
    pipeline_base._pad = pad_every_axis  # batched pipelines over documents and characters (module docstring)
    # Characters per token (module docstring); `impl` is the class or, since transformers 5.2x, its dotted path.
    token_classification = PIPELINE_REGISTRY.supported_tasks["token-classification"]
    if token_classification["impl"] in (TokenClassificationPipeline, _TOKEN_CLASSIFICATION_PATH):
        token_classification["impl"] = CharacterAwareTokenClassificationPipeline
    supported = PIPELINE_REGISTRY.get_supported_tasks()
    if TRANSLATION_TASK not in supported:
        PIPELINE_REGISTRY.register_pipeline(
            TRANSLATION_TASK, pipeline_class=Seq2SeqTranslationPipeline, pt_model=AutoModelForSeq2SeqLM, type="text"
        )
    if FEW_SHOT_TASK not in supported:
        PIPELINE_REGISTRY.register_pipeline(
            FEW_SHOT_TASK, pipeline_class=FewShotClassificationPipeline, pt_model=FewShotModelLoader, type="text"
        )

"""lancopku/SGM's beam search, as a `generate(custom_generate=sgm_original_beam_search)` decoding method.

The engineering beside the paper: `modeling_sgm.py` holds the model, whose `generate()` does transformers' greedy
and beam search with the repeat mask. This module reproduces the original code's `Beam` for conversions checked
against its outputs: the first step expands the start only, finished rows and 3-gram repeats get no children,
scores are divided by (length + 1), the whole batch stops together, and an unfinished hypothesis is the fallback.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import LogitsProcessorList
from transformers.generation.utils import GenerateBeamEncoderDecoderOutput

from hf_attn.layers.generation_cache import CACHE_FIELD, cache_field, output_cache

from .modeling_sgm import SgmForMultiLabelGeneration


def _has_repeated_trigram(tokens: list[int]) -> bool:
    trigrams = [tuple(tokens[index : index + 3]) for index in range(len(tokens) - 2)]
    return len(trigrams) != len(set(trigrams))


def sgm_original_beam_search(
    model: SgmForMultiLabelGeneration,
    input_ids: torch.LongTensor,
    logits_processor: LogitsProcessorList,
    stopping_criteria: Any,
    generation_config: Any,
    synced_gpus: bool = False,
    **model_kwargs: Any,
) -> torch.LongTensor | GenerateBeamEncoderDecoderOutput:
    """Beam search as lancopku/SGM's `Beam` runs it, for `model.generate(..., num_beams=K,
    custom_generate=sgm_original_beam_search)`.

    Per example: K hypotheses; the first step expands the start token only. At each step every live hypothesis's
    log-softmax scores (after `logits_processor`, which holds the repeat mask unless `mask_repeated_labels=False`)
    are added to its score; a hypothesis ending in EOS, or already holding a repeated 3-gram, has no children; the
    top K of the K·V candidates survive. Each surviving EOS adds (score / (length + 1)^length_penalty, …) to the
    example's finished list (length counts EOS; the original divides by length + 1 when `length_norm`). An example
    is done once EOS has topped its beam and it has a finished hypothesis, but every example keeps being advanced
    until all are done or `max_length` is reached, so a later, better finished hypothesis still counts. The result
    is the best finished hypothesis, or the top live one with its unnormalised score if none finished.

    Returns the sequences (start token, labels, EOS; padded with PAD), or with `return_dict_in_generate=True` a
    `GenerateBeamEncoderDecoderOutput` whose `sequences_scores` are the chosen scores and whose `cross_attentions`
    are, per step, the attention rows `(B, S)` along the chosen path.
    """
    config = model.config
    beams = generation_config.num_beams
    batch_size = input_ids.size(0) // beams
    steps = generation_config.max_length - input_ids.size(1)
    eos, pad = config.eos_token_id, config.pad_token_id
    penalty = generation_config.length_penalty
    sequences = input_ids  # (B·K, 1 + t): what the logits processors read
    scores = input_ids.new_zeros(batch_size, beams, dtype=torch.float32)
    tokens_per_step: list[torch.Tensor] = []  # (B, K) each
    parents_per_step: list[torch.Tensor] = []  # (B, K) each
    attention_per_step: list[torch.Tensor] = []  # (B, K, S): the parent's attention at that step
    finished: list[list[tuple[float, int, int]]] = [[] for _ in range(batch_size)]
    eos_on_top = [False] * batch_size
    cache = model_kwargs.get(CACHE_FIELD)
    offsets = torch.arange(batch_size, device=input_ids.device)[:, None] * beams
    for step in range(steps):
        if all(eos_on_top[b] and finished[b] for b in range(batch_size)):
            break
        outputs = model(
            decoder_input_ids=sequences[:, -1:],
            encoder_outputs=model_kwargs["encoder_outputs"],
            attention_mask=model_kwargs.get("attention_mask"),
            **cache_field(cache),
            use_cache=True,
        )
        cache = output_cache(outputs)
        log_probs = torch.log_softmax(outputs.logits[:, -1].float(), dim=-1)
        log_probs = logits_processor(sequences, log_probs)
        vocab = log_probs.size(-1)
        log_probs = log_probs.view(batch_size, beams, vocab)
        if step == 0:
            candidates = log_probs[:, 0]  # (B, V): only the start hypothesis
        else:
            candidates = log_probs + scores[:, :, None]
            blocked = tokens_per_step[-1] == eos
            history = sequences[:, 1:].view(batch_size, beams, -1).tolist()
            for b in range(batch_size):
                for k in range(beams):
                    if _has_repeated_trigram(history[b][k]):
                        blocked[b, k] = True
            candidates = candidates.masked_fill(blocked[:, :, None], -1e20).view(batch_size, -1)
        best_scores, best_ids = candidates.topk(beams, dim=-1)  # (B, K)
        parents = best_ids // vocab if step > 0 else torch.zeros_like(best_ids)
        tokens = best_ids - parents * vocab if step > 0 else best_ids
        scores = best_scores
        flat_parents = (parents + offsets).view(-1)
        cache.reorder_cache(flat_parents)
        sequences = torch.cat([sequences.index_select(0, flat_parents), tokens.view(-1, 1)], dim=-1)
        weights = outputs.cross_attentions[:, -1].view(batch_size, beams, -1)
        attention_per_step.append(weights.gather(1, parents[:, :, None].expand(-1, -1, weights.size(-1))))
        tokens_per_step.append(tokens)
        parents_per_step.append(parents)
        for b, k in (tokens == eos).nonzero().tolist():
            length = step + 1  # generated tokens, EOS included
            finished[b].append((float(scores[b, k]) / (length + 1) ** penalty, length, k))
        for b in range(batch_size):
            eos_on_top[b] = eos_on_top[b] or int(tokens[b, 0]) == eos
    chosen, chosen_scores, chosen_attention = [], [], []
    for b in range(batch_size):
        candidates_b = finished[b] or [(float(scores[b, 0]), len(tokens_per_step), 0)]
        score, length, k = sorted(candidates_b, key=lambda item: -item[0])[0]  # stable: first found wins ties
        hypothesis, attention = [], []
        for step in range(length - 1, -1, -1):
            hypothesis.append(int(tokens_per_step[step][b, k]))
            attention.append(attention_per_step[step][b, k])
            k = int(parents_per_step[step][b, k])
        chosen.append(hypothesis[::-1])
        chosen_attention.append(attention[::-1])
        chosen_scores.append(score)
    longest = max(len(hypothesis) for hypothesis in chosen)
    output = input_ids.new_full((batch_size, 1 + longest), pad)
    output[:, 0] = input_ids[0, 0]
    for b, hypothesis in enumerate(chosen):
        output[b, 1 : 1 + len(hypothesis)] = torch.tensor(hypothesis, dtype=output.dtype)
    if not generation_config.return_dict_in_generate:
        return output
    source_length = model_kwargs["encoder_outputs"].last_hidden_state.size(1)
    per_step = []
    for step in range(longest):
        rows = [
            attention[step] if step < len(attention) else attention[0].new_zeros(source_length)
            for attention in chosen_attention
        ]
        per_step.append(torch.stack(rows))
    return GenerateBeamEncoderDecoderOutput(
        sequences=output,
        sequences_scores=torch.tensor(chosen_scores, device=output.device),
        cross_attentions=tuple(per_step),
    )


__all__ = ["sgm_original_beam_search"]

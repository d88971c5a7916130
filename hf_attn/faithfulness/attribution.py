"""Gradient-based importance of each token of a text: gradient × input (Shrikumar et al. 2017; Jain & Wallace 2019,
§3's gradients) and Integrated Gradients (Sundararajan et al. 2017, "Axiomatic Attribution for Deep Networks", eq. 1),
the latter from Captum (`pip install "hf_attn[faithfulness]"`).

Both read the model at its embedding layer: the vectors e_t of the text's tokens are the input, and each token's
attribution is the sum over its vector's components (and over a token's characters, for character inputs; over
its tokens, for a unit of them: a support instance of Proto-HATT's episodes, `importance_over`).

- gradient × input: a_t = Σ_d e_td · ∂p(ŷ|x)/∂e_td;
- Integrated Gradients: a_t = Σ_d (e_td − e'_td) · ∫₀¹ ∂p(ŷ| e' + α(e − e'))/∂e_td dα, with e' the embeddings of
  the padding token at every real position (the text's mask unchanged), the integral a Riemann sum of `steps` points
  (Captum's Gauss–Legendre rule), run `internal_batch_size` points at a time. Completeness (their §3, axiom 1):
  Σ_t a_t = p(ŷ|x) − p(ŷ|x'); Captum reports the difference of the two sides as the convergence delta.

`embedding_swap` puts the vectors in: a forward hook on each embedding layer that reads the text's ids
(`text_embedding_layers`) replaces the output of its call on them (a pair's second text goes through the same layer
and is left alone), so every architecture is read the same way, whatever its inputs; a model with several such
layers (AttentionXML's label tree: one per level) is attributed at all of them, each token's share summed.

Shapes: B examples; T tokens, or S sentences × W words (the text's mask); E the embedding size; C classes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import torch

from ..data.importance import TEXT_MASK, ids_of, unit_mask

if TYPE_CHECKING:
    from transformers import PreTrainedModel

CAPTUM_EXTRA = 'pip install "hf_attn[faithfulness]"'


def _reads(given: torch.Tensor | None, ids: torch.Tensor) -> bool:
    """Whether an embedding layer's input `given` is the text's `ids` (in any shape with the same elements)."""
    return given is not None and given.numel() == ids.numel() and torch.equal(given.reshape(-1), ids.reshape(-1))


def text_embedding_layers(
    model: PreTrainedModel, inputs: dict[str, torch.Tensor], mask_name: str = TEXT_MASK
) -> list[torch.nn.Module]:
    """The embedding layers that read the first text's ids in a forward pass over `inputs`, found by running it
    once with a hook on every `nn.Embedding`: the model's input embeddings for most, one per level for
    AttentionXML's label tree (each level reads the words with its own table)."""
    ids, found = inputs[ids_of(mask_name)], []
    layers = [module for module in model.modules() if isinstance(module, torch.nn.Embedding)]

    def note(module: torch.nn.Module, args: tuple) -> None:
        if module not in found and _reads(args[0] if args else None, ids):
            found.append(module)

    handles = [layer.register_forward_pre_hook(note) for layer in layers]
    try:
        with torch.no_grad():
            model(**inputs)
    finally:
        for handle in handles:
            handle.remove()
    if not found:
        raise NotImplementedError(f"{type(model).__name__}: no embedding layer reads {ids_of(mask_name)} as given.")
    return found


@contextlib.contextmanager
def embedding_swap(
    layers: list[torch.nn.Module], ids: torch.Tensor, vectors: Callable[[], list[torch.Tensor] | None]
) -> Iterator[None]:
    """While open (one forward pass), the first call of each of `layers` on `ids` returns the matching tensor of
    `vectors()` (reshaped to that call's output) instead, where it gives them; a second call on the same ids (a
    pair's second text written the same) is left alone."""
    used: set = set()

    def swap(module: torch.nn.Module, args: tuple, output: torch.Tensor) -> torch.Tensor | None:
        replacement = vectors()
        if replacement is None or module in used or not _reads(args[0] if args else None, ids):
            return None
        used.add(module)
        return replacement[layers.index(module)].reshape(output.shape).to(output.dtype)

    handles = [layer.register_forward_hook(swap) for layer in layers]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def _token_sums(attributions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-component attributions `(B, ..., E)` summed to one per unit of `mask` (a token; a support instance
    `(B, N, K)`: over its tokens too), in the mask's shape, 0 at padding."""
    per_token = attributions.reshape(len(mask), mask[0].numel(), -1).sum(-1)
    return per_token.reshape(mask.shape) * mask.to(per_token.device).float()


def gradient_times_input(
    probability: Callable[[dict[str, torch.Tensor]], torch.Tensor],
    model: PreTrainedModel,
    inputs: dict[str, torch.Tensor],
    predicted: torch.Tensor,
    layers: list[torch.nn.Module] | None = None,
    mask_name: str = TEXT_MASK,
) -> torch.Tensor:
    """a_t = Σ_d e_td · ∂p(ŷ|x)/∂e_td for every token of the text, `(B, T)` (or `(B, S, W)`), summed over the
    text's embedding layers (`layers`, else `text_embedding_layers`)."""
    ids = inputs[ids_of(mask_name)]
    layers = layers or text_embedding_layers(model, inputs, mask_name)
    with torch.enable_grad():
        vectors = [layer(ids).detach().requires_grad_(True) for layer in layers]
        with embedding_swap(layers, ids, lambda: vectors):
            chosen = probability(inputs).gather(1, predicted[:, None]).sum()
        gradients = torch.autograd.grad(chosen, vectors)  # every layer found reads the text
    total = sum((g * v).detach().float() for g, v in zip(gradients, vectors, strict=True))
    return _token_sums(total, unit_mask(mask_name, inputs))


def integrated_gradients(
    probability: Callable[[dict[str, torch.Tensor]], torch.Tensor],
    model: PreTrainedModel,
    inputs: dict[str, torch.Tensor],
    predicted: torch.Tensor,
    steps: int = 32,
    internal_batch_size: int | None = None,
    layers: list[torch.nn.Module] | None = None,
    mask_name: str = TEXT_MASK,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Captum's Integrated Gradients of p(ŷ|x) at the text's embedding layers (`layers`, else
    `text_embedding_layers`), from the padding token's vectors (`model.config.pad_token_id`, 0 if unset; module
    docstring): the attribution of each token
    `(B, T)` (or `(B, S, W)`, summed over the layers) and each example's convergence delta `(B,)`. Captum missing is
    a `ModuleNotFoundError` naming the extra."""
    try:
        from captum.attr import IntegratedGradients
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(f"Integrated Gradients need Captum: {CAPTUM_EXTRA}") from error
    pad_token_id = model.config.pad_token_id or 0
    name = ids_of(mask_name)
    ids = inputs[name]
    others = [key for key in inputs if key != name]
    layers = layers or text_embedding_layers(model, inputs, mask_name)
    with torch.no_grad():
        vectors = tuple(layer(ids).detach() for layer in layers)
        baselines = tuple(layer(torch.full_like(ids, pad_token_id)).detach() for layer in layers)
    current: list[torch.Tensor] = []

    def forward(*arguments: torch.Tensor) -> torch.Tensor:
        # Captum hands the interpolated vectors of each layer and, repeated alongside, the other inputs.
        points, (batch_ids, *rest) = arguments[: len(layers)], arguments[len(layers) :]
        current[:] = points
        batch = {name: batch_ids, **dict(zip(others, rest, strict=True))}
        with embedding_swap(layers, batch_ids, lambda: current or None):
            return probability(batch)

    method = IntegratedGradients(forward)
    with torch.enable_grad():
        attributions, delta = method.attribute(
            vectors,
            baselines=baselines,
            target=predicted,
            n_steps=steps,
            additional_forward_args=(ids, *(inputs[key] for key in others)),
            internal_batch_size=internal_batch_size,
            return_convergence_delta=True,
        )
    total = sum(attribution.detach().float() for attribution in attributions)
    return _token_sums(total, unit_mask(mask_name, inputs)), delta.detach().float()

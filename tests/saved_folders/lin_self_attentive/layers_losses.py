"""Task losses shared by the classification heads."""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint
from transformers import PreTrainedConfig

from .layers_kernels import kernels_apply
from .layers_validation import check_labels, check_multi_hot, value_checks_apply


def classification_loss(
    config: PreTrainedConfig, logits: torch.Tensor, labels: torch.Tensor, rows: torch.Tensor | None = None
) -> torch.Tensor:
    """The task loss by `config.problem_type` (inferred from `num_labels` and the labels' dtype, as transformers).

    `rows` (boolean `(B,)`, optional) keeps only those examples: the mean runs over them, and a batch without one
    gives 0 with a gradient of 0. It is a weight, not an index (`logits[rows]` has a data-dependent shape): the loss
    stays one graph under `torch.compile(fullgraph=True)` and reads nothing on the host.
    """
    if config.problem_type is None:
        if config.num_labels == 1:
            config.problem_type = "regression"
        elif labels.dtype in (torch.long, torch.int):
            config.problem_type = "single_label_classification"
        else:
            config.problem_type = "multi_label_classification"
    if config.problem_type == "regression":
        if labels.numel() != logits.numel():
            raise ValueError(
                f"`labels` must hold {logits.numel()} regression targets, got shape {tuple(labels.shape)}."
            )
        if rows is None:
            return nn.functional.mse_loss(logits.squeeze(-1), labels.to(logits.dtype).view(-1))
        errors = (logits.view(-1) - labels.to(logits.dtype).view(-1)).pow(2) * rows  # (B,)
        return errors.sum() / rows.sum().clamp(min=1)
    if config.problem_type == "single_label_classification":
        if rows is not None:
            labels = torch.where(rows, labels.view(-1), -100)
        return token_cross_entropy(logits.view(-1, config.num_labels), labels.view(-1), batch_shape=logits.shape[:1])
    if tuple(labels.shape) != tuple(logits.shape):
        raise ValueError(f"`labels` must have shape {tuple(logits.shape)} (multi-hot), got {tuple(labels.shape)}.")
    if rows is not None:
        return multi_label_cross_entropy(logits, torch.where(rows[:, None], labels.to(logits.dtype), -100))
    if value_checks_apply(labels) and labels.numel() and (float(labels.min()) < 0 or float(labels.max()) > 1):
        raise ValueError(
            f"`labels` must hold multi-hot values in [0, 1] (1 = the label applies), got min {float(labels.min())} "
            f"and max {float(labels.max())}."
        )
    return nn.functional.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))


# Positions × classes whose float32 log-probabilities one chunk of the loss computes at once (128 MiB). A larger loss
# runs chunk by chunk under activation checkpointing: a 25k-token batch over a 32k vocabulary (8·10⁸ logits) would
# otherwise keep a 3.3 GB float32 copy of its logits and their log-softmax for the backward pass.
LOSS_CHUNK_ELEMENTS = 2**25
# On CUDA the fused output loss takes a few large chunks (2²⁸ logits: 512 MiB in bf16), so that a step adds a
# handful of launches a chunk and a handful of chunks; the CPU keeps `LOSS_CHUNK_ELEMENTS` (bounded memory).
CUDA_LOSS_CHUNK_ELEMENTS = 2**28
# Tests set this to run the loss kernel (`triton_losses.py`) on CPU tensors too, in Triton's interpreter.
LOSS_KERNEL_ON_CPU = False


def loss_chunk_elements(device: torch.device) -> int:
    """How many logits the fused output loss computes at a time on `device`."""
    return CUDA_LOSS_CHUNK_ELEMENTS if device.type == "cuda" else LOSS_CHUNK_ELEMENTS


def _summed_cross_entropy(logits: torch.Tensor, labels: torch.Tensor, label_smoothing: float) -> torch.Tensor:
    """Σ cross-entropy over rows of `logits (N, V)` (any float dtype, computed in float32) whose label is not −100."""
    return nn.functional.cross_entropy(
        logits.float(), labels, ignore_index=-100, reduction="sum", label_smoothing=label_smoothing
    )


def token_cross_entropy(
    logits: torch.Tensor,
    labels: torch.Tensor,
    num_items_in_batch: torch.Tensor | int | None = None,
    label_smoothing: float = 0.0,
    batch_shape: torch.Size | tuple[int, ...] | None = None,
    chunk_elements: int = LOSS_CHUNK_ELEMENTS,
) -> torch.Tensor:
    """Mean cross-entropy over the positions whose label is not -100: `logits (..., V)`, `labels (...)`.

    The one rule for a batch with nothing to score: the sum over no positions is 0 and is divided by 1, so the loss
    is 0 with a gradient of 0, never NaN. A NaN from real scores still comes out as NaN (divergence stays visible).
    `num_items_in_batch` (from `Trainer` under gradient accumulation) replaces the batch's own count.
    `labels` must have the logits' leading shape (`batch_shape`, when the logits were flattened first) and hold
    ids in [0, V) or −100; anything else is a `ValueError` naming `labels`. A loss over more than `chunk_elements`
    logits that needs a gradient runs in chunks (`LOSS_CHUNK_ELEMENTS`): the same value, a fraction of the memory.
    """
    check_labels(labels, logits.shape[:-1] if batch_shape is None else batch_shape, logits.size(-1))
    flat_logits, flat_labels = logits.reshape(-1, logits.size(-1)), labels.reshape(-1)
    if logits.numel() <= chunk_elements or not (torch.is_grad_enabled() and logits.requires_grad):
        summed = _summed_cross_entropy(flat_logits, flat_labels, label_smoothing)
    else:  # chunk by chunk, each recomputed in the backward pass: one chunk's float32 temporaries at a time
        rows = max(1, chunk_elements // logits.size(-1))
        chunks = zip(flat_logits.split(rows), flat_labels.split(rows), strict=True)  # split: one cat in the backward
        summed = sum(
            checkpoint(_summed_cross_entropy, chunk, chunk_labels, label_smoothing, use_reentrant=False)
            for chunk, chunk_labels in chunks
        )
    return _per_scored_token(summed, labels, num_items_in_batch)


def _per_scored_token(
    summed: torch.Tensor, labels: torch.Tensor, num_items_in_batch: torch.Tensor | int | None
) -> torch.Tensor:
    """The summed loss over the positions scored (labels not −100, or `num_items_in_batch`), at least 1: nothing
    to score gives 0, never NaN."""
    count = (labels != -100).sum() if num_items_in_batch is None else num_items_in_batch
    return summed / torch.as_tensor(count, device=summed.device).clamp(min=1).to(summed.dtype)


class _LinearCrossEntropy(torch.autograd.Function):
    """Σ_i CE(W h_i + b, y_i) over the rows whose label is not −100, with the gradients of h, W and b formed in the
    forward pass, chunk by chunk (`fused_linear_cross_entropy`). Everything runs in `hidden`'s dtype except the
    log-softmax, in float32 one chunk at a time.

    With p = softmax(z) and ε label smoothing over V classes, the loss of a row and its gradient are
        ℓ = −(1 − ε) log p_y − (ε / V) Σ_c log p_c,      ∂ℓ/∂z = p − (1 − ε) onehot(y) − ε / V,
    and ∂h = (∂ℓ/∂z) W, ∂W = Σ_rows (∂ℓ/∂z)ᵀ h, ∂b = Σ_rows ∂ℓ/∂z; the backward pass only scales them by ∂L/∂(Σ ℓ).
    Where Triton runs (CUDA), one kernel a chunk forms every row's ℓ and writes ∂ℓ/∂z over the chunk's logits
    (`triton_losses.py`); elsewhere the same in PyTorch operations.
    """

    @staticmethod
    def forward(
        ctx,
        hidden: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        labels: torch.Tensor,
        label_smoothing: float,
        chunk_rows: int,
    ) -> torch.Tensor:
        want_hidden, want_weight = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        want_bias = bias is not None and ctx.needs_input_grad[2]
        if kernels_apply(hidden, on_cpu=LOSS_KERNEL_ON_CPU):
            wanted = (want_hidden, want_weight, want_bias)
            summed, *gradients = _kernel_chunks(hidden, weight, bias, labels, label_smoothing, chunk_rows, wanted)
            ctx.save_for_backward(*gradients)
            return summed
        vocabulary = weight.size(0)
        summed = hidden.new_zeros((), dtype=torch.float32)
        grad_hidden, grad_weight, grad_bias = _gradient_buffers(hidden, weight, want_hidden, want_weight, want_bias)
        for start in range(0, hidden.size(0), chunk_rows):
            rows, targets = hidden[start : start + chunk_rows], labels[start : start + chunk_rows]
            logits = nn.functional.linear(rows, weight, bias)  # (n, V), the chunk's logits, in hidden's dtype
            log_probabilities = torch.log_softmax(logits.float(), dim=-1)  # (n, V) float32
            del logits
            scored = targets != -100
            safe = targets.clamp(min=0)[:, None]  # −100 rows read class 0, then weigh 0
            row_losses = -(1 - label_smoothing) * log_probabilities.gather(1, safe).squeeze(1)
            if label_smoothing:
                row_losses = row_losses - label_smoothing * log_probabilities.mean(dim=-1)
            summed = summed + torch.where(scored, row_losses, 0.0).sum()
            if not (want_hidden or want_weight or want_bias):
                continue
            grad_logits = log_probabilities.exp_()  # p, in place of log p
            if label_smoothing:
                grad_logits.sub_(label_smoothing / vocabulary)
            grad_logits.scatter_add_(1, safe, grad_logits.new_full(safe.shape, -(1 - label_smoothing)))
            grad_logits.mul_(scored[:, None])  # ignored rows: no gradient
            grad_logits = grad_logits.to(hidden.dtype)
            if want_hidden:
                grad_hidden[start : start + chunk_rows] = grad_logits @ weight  # (n, D)
            if want_weight:
                grad_weight += (grad_logits.t() @ rows).float()  # (V, D)
            if want_bias:
                grad_bias += grad_logits.float().sum(0)
        ctx.save_for_backward(grad_hidden, grad_weight, grad_bias)
        return summed

    @staticmethod
    def backward(ctx, grad_summed: torch.Tensor) -> tuple:
        grad_hidden, grad_weight, grad_bias = ctx.saved_tensors
        scale = grad_summed.float()
        return (
            None if grad_hidden is None else (grad_hidden.float() * scale).to(grad_hidden.dtype),
            None if grad_weight is None else grad_weight * scale,
            None if grad_bias is None else grad_bias * scale,
            None,
            None,
            None,
        )


def _gradient_buffers(
    hidden: torch.Tensor, weight: torch.Tensor, want_hidden: bool, want_weight: bool, want_bias: bool
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    """∂h (filled chunk by chunk), and the float32 sums ∂W and ∂b (zero), for the gradients wanted."""
    grad_hidden = torch.empty_like(hidden) if want_hidden else None
    grad_weight = torch.zeros_like(weight, dtype=torch.float32) if want_weight else None
    grad_bias = torch.zeros(weight.size(0), dtype=torch.float32, device=hidden.device) if want_bias else None
    return grad_hidden, grad_weight, grad_bias


def _kernel_chunks(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    labels: torch.Tensor,
    label_smoothing: float,
    chunk_rows: int,
    wanted: tuple[bool, bool, bool],
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    """`_LinearCrossEntropy.forward` on the loss kernel: per chunk the projection, one kernel (every row's loss, and
    ∂ℓ/∂z written over the chunk's logits), then ∂h, ∂W and ∂b from them, as `wanted` (∂h, ∂W, ∂b); the rows'
    losses are summed once, at the end. Returns `(Σ ℓ, ∂h or None, ∂W (float32) or None, ∂b (float32) or None)`."""
    from .layers_triton_losses import cross_entropy_rows

    want_hidden, want_weight, want_bias = wanted
    gradient = want_hidden or want_weight or want_bias
    row_losses = hidden.new_empty(hidden.size(0), dtype=torch.float32)
    grad_hidden, grad_weight, grad_bias = _gradient_buffers(hidden, weight, want_hidden, want_weight, want_bias)
    exact = hidden.dtype == torch.float32  # the float32 sums can then take the products in place
    for start in range(0, hidden.size(0), chunk_rows):
        rows, targets = hidden[start : start + chunk_rows], labels[start : start + chunk_rows]
        logits = nn.functional.linear(rows, weight, bias)  # (n, V), the chunk's logits, in hidden's dtype
        cross_entropy_rows(logits, targets, row_losses[start : start + chunk_rows], label_smoothing, gradient)
        grad_logits = logits  # ∂ℓ/∂z, written over the logits by the kernel
        if want_hidden:
            torch.mm(grad_logits, weight, out=grad_hidden[start : start + chunk_rows])  # (n, D)
        if want_weight:
            if exact:
                grad_weight.addmm_(grad_logits.t(), rows)  # (V, D)
            else:
                grad_weight += (grad_logits.t() @ rows).float()
        if want_bias:
            grad_bias += grad_logits.sum(0, dtype=torch.float32)
    return row_losses.sum(), grad_hidden, grad_weight, grad_bias


def fused_linear_cross_entropy(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    labels: torch.Tensor,
    num_items_in_batch: torch.Tensor | int | None = None,
    label_smoothing: float = 0.0,
    chunk_elements: int | None = None,
) -> torch.Tensor:
    """`token_cross_entropy(linear(hidden, weight, bias), labels, ...)` without the logits: `hidden (..., D)`,
    `weight (V, D)`, `bias (V,)` or None, `labels (...)`; `chunk_elements` logits at a time (by default
    `loss_chunk_elements` of the device: a few large chunks on CUDA, bounded memory on a CPU).

    The output projection and the loss run together, `chunk_elements // V` rows at a time (as Liger-Kernel's
    fused linear cross-entropy does): each chunk's logits go through a float32 log-softmax to the loss and, when a
    gradient is wanted, straight to their contribution to ∂h, ∂W and ∂b, computed here, in the forward pass. The
    `(tokens, V)` logits never exist whole, and nothing is recomputed in the backward pass. The same value and
    gradients as the two-step loss (tested), the same rules for −100 and for a batch with nothing to score; ε label
    smoothing as `nn.functional.cross_entropy(label_smoothing=ε)`. Under autocast the projection runs in the
    autocast dtype, as `nn.Linear` would.
    """
    vocabulary = weight.size(0)
    check_labels(labels, hidden.shape[:-1], vocabulary)
    device_type = hidden.device.type
    dtype = torch.get_autocast_dtype(device_type) if torch.is_autocast_enabled(device_type) else hidden.dtype
    flat_hidden = hidden.reshape(-1, hidden.size(-1))
    chunk_elements = loss_chunk_elements(hidden.device) if chunk_elements is None else chunk_elements
    chunk_rows = max(1, chunk_elements // vocabulary)
    with torch.autocast(device_type, enabled=False):
        summed = _LinearCrossEntropy.apply(
            flat_hidden.to(dtype),
            weight.to(dtype),
            None if bias is None else bias.to(dtype),
            labels.reshape(-1),
            float(label_smoothing),
            chunk_rows,
        )
    return _per_scored_token(summed, labels, num_items_in_batch)


def multi_label_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean binary cross-entropy with logits over the entries whose label is not −100: `logits (..., K)`, `labels`
    of the same shape holding 0/1 indicators (or soft targets in [0, 1]) and −100 for entries not to score (e.g. a
    tree level's padded candidate slots).

    A batch with nothing to score gives 0 with a gradient of 0, never NaN (the rule of `token_cross_entropy`).
    """
    if tuple(labels.shape) != tuple(logits.shape):
        raise ValueError(f"`labels` must have shape {tuple(logits.shape)}, got {tuple(labels.shape)}.")
    check_multi_hot(labels)
    scored = labels != -100
    losses = nn.functional.binary_cross_entropy_with_logits(
        logits.float(), labels.float().clamp(min=0), reduction="none"
    )
    return (losses * scored).sum() / scored.sum().clamp(min=1)

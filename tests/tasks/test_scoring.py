"""The held-out passes that run a trained model (`hf_attn.tasks.scoring`): attention on the evidence, batch by batch
over rows of different lengths, equals the same scores taken one example at a time."""

from __future__ import annotations

import torch
from datasets import Dataset

from hf_attn.registry.table import ARCHITECTURES
from hf_attn.tasks.metrics import evidence_attention_scores
from hf_attn.tasks.scoring import encoded_input_columns, score_evidence_attention
from tests.helpers import tiny_config

LIN = ARCHITECTURES["lin_self_attentive"]


def test_evidence_attention_is_scored_as_one_example_at_a_time():
    torch.manual_seed(0)
    head = LIN.heads[0]
    model = head.model_class(tiny_config(LIN)).eval()
    generator = torch.Generator().manual_seed(1)
    lengths, evidence = [5, 9, 3, 7, 4], [2, 8, 0, 6, -1]  # -1: no evidence, not scored
    ids = [torch.randint(4, model.config.vocab_size, (length,), generator=generator).tolist() for length in lengths]
    rows = Dataset.from_dict(
        {
            "input_ids": ids,
            "attention_mask": [[1] * length for length in lengths],
            "evidence": evidence,
            "label": [0] * 5,
        }
    )
    assert encoded_input_columns(rows) == ["input_ids", "attention_mask"]
    field = head.evidence_field
    scores = score_evidence_attention(
        model, rows, "evidence", field, batch_size=2, attention_kwargs=head.attention_kwargs
    )
    one_by_one = []
    with torch.no_grad():
        for row in ids:
            attention = getattr(model(input_ids=torch.tensor([row]), **head.attention_kwargs), field)
            attention = attention[-1] if isinstance(attention, tuple) else attention
            one_by_one.append(attention.float())
    longest = max(lengths)
    padded = torch.cat(
        [torch.nn.functional.pad(a if a.dim() == 3 else a[:, None], (0, longest - a.size(-1))) for a in one_by_one]
    )
    expected = evidence_attention_scores(padded, torch.tensor(evidence))
    assert scores.keys() == expected.keys() and all(abs(scores[k] - expected[k]) < 1e-5 for k in expected), (
        scores,
        expected,
    )
    assert 0 < scores["evidence_mass"] < 1

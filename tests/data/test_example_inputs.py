"""Random inputs of given lengths (`hf_attn.data.example_inputs`), what every head is tested on: right-padded ids
below the vocabulary that never draw the padding id, an all-padding row for a length of 0, and documents of
sentences."""

from __future__ import annotations

import torch
from transformers import PreTrainedConfig

from hf_attn.data.example_inputs import document_sentence_lengths, documents, output_vocab_size, token_ids


def test_token_ids_avoid_the_padding_id_and_follow_their_lengths():
    config = PreTrainedConfig(pad_token_id=3)
    config.vocab_size = 6
    ids, mask = token_ids(config, [4, 0, 2], torch.Generator().manual_seed(0))
    assert ids.shape == mask.shape == (3, 4) and mask.sum(dim=1).tolist() == [4, 0, 2]
    real = ids[mask.bool()]
    assert ((real != 3) & (real >= 0) & (real < 6)).all() and (ids[~mask.bool()] == 3).all()
    assert set(token_ids(config, [200], torch.Generator().manual_seed(1))[0].flatten().tolist()) == {0, 1, 2, 4, 5}
    assert token_ids(config, [], torch.Generator())[0].shape == (0, 1)


def test_documents_have_the_sentences_asked_for_and_an_empty_one_is_all_padding():
    assert document_sentence_lengths(5) == [4, 3, 5] and document_sentence_lengths(1) == [1]
    assert document_sentence_lengths(0) == []
    ids, mask = documents([[2, 3], [], [1]], vocab_size=9, pad_token_id=0, generator=torch.Generator().manual_seed(0))
    assert ids.shape == mask.shape == (3, 2, 3)
    assert mask.sum(dim=2).tolist() == [[2, 3], [0, 0], [1, 0]] and (ids[mask.bool()] != 0).all()
    assert (ids[~mask.bool()] == 0).all()


def test_the_generated_vocabulary_is_the_target_sides_where_it_has_its_own():
    config = PreTrainedConfig()
    config.vocab_size = 50
    assert output_vocab_size(config) == 50
    config.target_vocab_size = 12
    assert output_vocab_size(config) == 12

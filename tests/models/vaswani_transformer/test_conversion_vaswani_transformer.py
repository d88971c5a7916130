"""Conversion of Transformer checkpoints (Marian, FSMT, fairseq) to hf_attn: logits, generation and the original's
decoding settings equal to the source model's."""

from __future__ import annotations

import pytest
import torch
from transformers import GenerationConfig, MarianConfig, MarianMTModel

from hf_attn import VaswaniTransformerForConditionalGeneration

SOURCE = torch.tensor([[5, 6, 7, 8, 3], [9, 10, 3, 0, 0]])
TARGET = torch.tensor([[2, 11, 12, 13], [2, 14, 15, 0]])
GENERATION = {"max_new_tokens": 10, "do_sample": False, "bad_words_ids": None, "forced_eos_token_id": None}


def load_converter():
    from hf_attn.models.vaswani_transformer import convert_vaswani_transformer_to_hf

    return convert_vaswani_transformer_to_hf


def paper_like_marian_config() -> MarianConfig:
    """A tiny Marian configured as the paper's model: relu, post-LN, sinusoids, scaled embeddings."""
    return MarianConfig(
        vocab_size=60, d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=32, decoder_ffn_dim=32, activation_function="relu",
        max_position_embeddings=64, scale_embedding=True, pad_token_id=0, eos_token_id=3, decoder_start_token_id=0,
    )  # fmt: skip


@pytest.fixture(scope="session")
def marian_pair(tmp_path_factory):
    """A random MarianMTModel configured as the paper's model (relu, post-LN, sinusoids, scaled embeddings), and
    the same weights converted to hf_attn."""
    torch.manual_seed(0)
    config = paper_like_marian_config()
    marian = MarianMTModel(config).eval()
    with torch.no_grad():
        marian.final_logits_bias.normal_()  # exercise the output bias too
    source = tmp_path_factory.mktemp("marian")
    marian.save_pretrained(source)
    converted = load_converter().convert("marian", source, tmp_path_factory.mktemp("converted"))
    return marian, converted


@torch.no_grad()
def test_logits_match_marian(marian_pair):
    marian, ours = marian_pair
    mask, target_mask = (SOURCE != 0).long(), (TARGET != 0).long()
    target = TARGET.clone()
    target[:, 0] = 0  # Marian starts decoding from the pad id
    expected = marian(SOURCE, attention_mask=mask, decoder_input_ids=target, decoder_attention_mask=target_mask)
    actual = ours(SOURCE, attention_mask=mask, decoder_input_ids=target, decoder_attention_mask=target_mask)
    torch.testing.assert_close(actual.logits, expected.logits, rtol=0, atol=1e-5)
    assert ours.output_bias is not None and ours.lm_head.weight is ours.model.shared.weight


@pytest.mark.parametrize("num_beams", [1, 4])
def test_generate_matches_marian(marian_pair, num_beams):
    marian, ours = marian_pair
    mask = (SOURCE != 0).long()
    expected = marian.generate(SOURCE, attention_mask=mask, num_beams=num_beams, **GENERATION)
    actual = ours.generate(SOURCE, attention_mask=mask, num_beams=num_beams, **GENERATION)
    assert actual.tolist() == expected.tolist()


@pytest.mark.parametrize("num_beams", [1, 4])
def test_static_cache_generation_matches_marian(marian_pair, num_beams):
    """`generate(cache_implementation="static")`: the decoder on fixed-size key/value buffers (its own masks over the
    written slots, positions from the device-side count) decodes what Marian and the dynamic cache decode."""
    marian, ours = marian_pair
    mask = (SOURCE != 0).long()
    expected = marian.generate(SOURCE, attention_mask=mask, num_beams=num_beams, **GENERATION)
    static = {"num_beams": num_beams, "cache_implementation": "static"}
    actual = ours.generate(SOURCE, attention_mask=mask, **static, **GENERATION)
    assert actual.tolist() == expected.tolist()


def test_conversion_keeps_marian_generation_settings(tmp_path):
    """Logits equal is not enough: the converted model must decode as Marian does with the settings Marian saved
    (forced EOS, banned words, beam size, max length), greedy and beam 4 alike."""
    torch.manual_seed(1)
    config = paper_like_marian_config()
    marian = MarianMTModel(config).eval()
    marian.generation_config = GenerationConfig(
        decoder_start_token_id=0, pad_token_id=0, eos_token_id=3, forced_eos_token_id=3, bad_words_ids=[[0], [7]],
        num_beams=4, max_length=9,
    )  # fmt: skip
    marian.save_pretrained(tmp_path / "marian")
    ours = load_converter().convert("marian", tmp_path / "marian", tmp_path / "converted")
    reloaded = VaswaniTransformerForConditionalGeneration.from_pretrained(tmp_path / "converted").eval()
    saved = reloaded.generation_config
    assert (saved.forced_eos_token_id, saved.bad_words_ids, saved.num_beams, saved.max_length) == (3, [[0], [7]], 4, 9)
    mask = (SOURCE != 0).long()
    for num_beams in (1, 4):
        expected = marian.generate(SOURCE, attention_mask=mask, num_beams=num_beams)
        for model in (ours, reloaded):
            assert model.generate(SOURCE, attention_mask=mask, num_beams=num_beams).tolist() == expected.tolist()
    # Without the carried settings the outputs differ: this test can fail.
    stripped = ours.generate(SOURCE, attention_mask=mask, num_beams=4, forced_eos_token_id=None, bad_words_ids=None)
    assert stripped.tolist() != marian.generate(SOURCE, attention_mask=mask, num_beams=4).tolist()


@pytest.fixture(scope="session")
def fsmt_family(tmp_path_factory):
    """A random FSMT model (HF's port of fairseq's transformer), converted from its HF folder and from a fairseq
    checkpoint built here with fairseq's key names and an `argparse.Namespace` of arguments."""
    import argparse

    from transformers import FSMTConfig, FSMTForConditionalGeneration

    torch.manual_seed(0)
    config = FSMTConfig(
        langs=["en", "de"], src_vocab_size=60, tgt_vocab_size=60, d_model=16, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=32, decoder_ffn_dim=32,
        activation_function="relu", max_position_embeddings=64, scale_embedding=True, tie_word_embeddings=True,
    )  # fmt: skip
    fsmt = FSMTForConditionalGeneration(config).eval()
    folder = tmp_path_factory.mktemp("fsmt")
    fsmt.save_pretrained(folder)
    converter = load_converter()
    from_fsmt = converter.convert("fsmt", folder, tmp_path_factory.mktemp("from_fsmt"))
    state_dict = {k.removeprefix("model."): v for k, v in fsmt.state_dict().items() if "embed_positions" not in k}
    state_dict.update({"encoder.version": torch.tensor([3.0]), "decoder.version": torch.tensor([3.0])})
    args = argparse.Namespace(
        encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_embed_dim=32, decoder_ffn_embed_dim=32, dropout=0.1, attention_dropout=0.0,
        activation_dropout=0.0, activation_fn="relu", max_source_positions=64, share_all_embeddings=True,
        share_decoder_input_output_embed=True, encoder_normalize_before=False, decoder_normalize_before=False,
        beam=5, lenpen=0.6, max_len_a=0, max_len_b=12,
    )  # fmt: skip
    checkpoint = tmp_path_factory.mktemp("fairseq") / "checkpoint_best.pt"
    torch.save({"args": args, "model": state_dict}, checkpoint)
    from_fairseq = converter.convert("fairseq", checkpoint, tmp_path_factory.mktemp("from_fairseq"))
    generation = from_fairseq.generation_config  # fairseq's decoding arguments travel with the weights
    assert (generation.num_beams, generation.length_penalty, generation.max_new_tokens) == (5, 0.6, 12)
    return fsmt, {"fsmt": from_fsmt, "fairseq": from_fairseq}


@pytest.mark.parametrize("source", ["fsmt", "fairseq"])
@torch.no_grad()
def test_fairseq_family_logits_and_generation_match(fsmt_family, source):
    fsmt, converted = fsmt_family
    ours = converted[source]
    assert ours.config.position_offset == 2 and ours.config.sinusoid_timescale == "tensor2tensor"
    source_ids = torch.tensor([[5, 6, 7, 8, 2], [9, 10, 2, 1, 1]])  # fairseq: <pad> 1, </s> 2
    mask = (source_ids != 1).long()
    target = torch.tensor([[2, 11, 12, 13], [2, 14, 15, 16]])  # decoding starts from </s>
    # FSMT applies its causal mask only with use_cache=False
    expected = fsmt(source_ids, attention_mask=mask, decoder_input_ids=target, use_cache=False).logits
    actual = ours(source_ids, attention_mask=mask, decoder_input_ids=target).logits
    torch.testing.assert_close(actual, expected, rtol=0, atol=1e-5)
    for num_beams in (1, 4):
        kwargs = {"max_new_tokens": 10, "do_sample": False, "num_beams": num_beams, "forced_eos_token_id": None}
        assert (
            ours.generate(source_ids, attention_mask=mask, **kwargs).tolist()
            == fsmt.generate(source_ids, attention_mask=mask, **kwargs).tolist()
        )


def test_fairseq_reader_refuses_what_it_cannot_convert(tmp_path):
    converter = load_converter()
    checkpoint = tmp_path / "bad.pt"
    torch.save({"model": {}}, checkpoint)
    with pytest.raises(ValueError, match="not a fairseq checkpoint"):
        converter.convert("fairseq", checkpoint, tmp_path / "out")
    with pytest.raises(ValueError, match="unknown source"):
        converter.convert("opennmt", checkpoint, tmp_path / "out")

"""The Transformer learns the synthetic translation task; the trained model works through pipelines."""

from __future__ import annotations

import datasets
import pytest
import transformers
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, pipeline

import hf_attn  # noqa: F401
from hf_attn.commands.train import train
from hf_attn.data import toy_translation

# The tests share a session-scoped fixture: one worker runs them all (`--dist loadgroup`) and keeps it, so it is
# built once even when other tests run between them (a module-scoped one was rebuilt then).
pytestmark = pytest.mark.xdist_group("vaswani_learning")


SMALL = {
    "d_model": 64,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "encoder_ffn_dim": 128,
    "decoder_ffn_dim": 128,
}


@pytest.fixture(scope="session")
def trained(tmp_path_factory):
    transformers.logging.set_verbosity_error()
    datasets.disable_progress_bars()
    output = tmp_path_factory.mktemp("translation")
    result = train(
        output, arch="vaswani_transformer", num_train=3000, num_eval=300, seed=0, epochs=15, batch_size=32,
        schedule="noam", warmup_steps=400, config_overrides=SMALL, disable_tqdm=True, logging_steps=10**9,
    )  # fmt: skip
    print(f"\nexact match {result.metrics['exact_match']:.4f}, BLEU {result.metrics['bleu']:.2f} (beam 4, held-out)")
    return result, output


def test_reaches_exact_match_with_beam_four(trained):
    result, _ = trained
    assert result.model.generation_config.num_beams == 4
    assert result.metrics["exact_match"] >= 0.95
    assert result.metrics["bleu"] >= 95.0


def test_saved_model_translates_after_auto_loading(trained):
    """transformers 5 removed the `translation` and `text2text-generation` pipelines (MIGRATION_GUIDE_V5); the
    Auto classes + `generate` are the supported path, with the saved generation config (beam 4)."""
    _, output = trained
    model = AutoModelForSeq2SeqLM.from_pretrained(output).eval()
    tokenizer = AutoTokenizer.from_pretrained(output)
    examples = toy_translation(8, seed=12345)
    inputs = tokenizer(list(examples["source"]), return_tensors="pt", padding=True)
    translations = tokenizer.batch_decode(model.generate(**inputs), skip_special_tokens=True)
    assert model.generation_config.num_beams == 4
    assert sum(t == r for t, r in zip(translations, examples["target"], strict=True)) >= 7


def test_hf_attn_translation_pipeline(trained):
    """transformers 5 refuses `pipeline("translation")`; `import hf_attn` registers `hf-attn-translation`. It must
    give exactly what `generate` + decode give with the saved generation config."""
    _, output = trained
    translator = pipeline("hf-attn-translation", model=str(output))
    examples = toy_translation(6, seed=777)
    sources = list(examples["source"])
    results = [r["translation_text"] for r in translator(sources)]
    model, tokenizer = translator.model, translator.tokenizer
    direct = [
        tokenizer.decode(model.generate(**tokenizer(source, return_tensors="pt"))[0], skip_special_tokens=True)
        for source in sources
    ]
    assert results == direct
    assert sum(r == t for r, t in zip(results, examples["target"], strict=True)) >= 4
    greedy = translator(sources[0], num_beams=1)["translation_text"]
    assert greedy == tokenizer.decode(
        model.generate(**tokenizer(sources[0], return_tensors="pt"), num_beams=1)[0], skip_special_tokens=True
    )

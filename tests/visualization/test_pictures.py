"""Attention pictures over the registry: every head is drawn as self-contained HTML (one token element per real token,
weights as computed, a legend per panel, under 1 MB for 100 tokens) and as a non-blank PNG, or says why it has no
picture; a tiny trained model of every architecture goes through `hf-attn visualize` and its card, and its page
through headless Chromium; bertviz reads the Transformer's maps."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from hf_attn import visualize
from hf_attn.cli import main
from hf_attn.registry.table import ARCHITECTURES
from hf_attn.tasks.heads import load_trained
from hf_attn.visualization import AttentionFigure, TextPanel
from tests.helpers import TEXTS, check_in_browser, corpus_tokenizer, tiny_config, tiny_model_and_tokenizer

# ~100 tokens: a page for a text this long stays under 1 MB whatever the head draws.
LONG_TEXT = " ".join(["the food was great and the service was awful ."] * 10)
# Heads with nothing to draw: a baseline without attention, a plain prototypical network, a biLM (no task mix).
NO_PICTURE = {"SgmForMultiLabelClassification", "ProtoHattProtoNetForFewShotClassification",
              "ElmoForBidirectionalLanguageModeling"}  # fmt: skip
HEADS = [
    pytest.param(architecture, head, id=f"{name}-{head.model_class.__name__}")
    for name, architecture in ARCHITECTURES.items()
    for head in architecture.heads
]


def view_options(head, model) -> dict:
    """What a head's view needs besides the text: a few-shot support set (K shots of 2 classes, with entity word
    indices for a relation model)."""
    if head.inputs.name != "episodes":
        return {}
    shots = getattr(model.config, "num_shots", 2)
    rows = [("good", "the food was great"), ("bad", "the service was awful")]
    if model.config.use_entity_positions:
        return {"support": [(label, text, 0, 2) for label, text in rows for _ in range(shots)], "entities": (1, 3)}
    return {"support": [row for row in rows for _ in range(shots)]}


def check_page(page: str, figure: AttentionFigure) -> None:
    """Self-contained, under 1 MB, a legend per panel, a token element per token of the text panels, no padding."""
    assert "http" not in page and "<script" not in page  # self-contained, nothing fetched
    assert len(page.encode()) < 1_000_000
    text_panels = [panel for panel in figure.panels if isinstance(panel, TextPanel)]
    spans = re.findall(r'<span class="token" data-weight="([^"]+)"', page)
    assert len(spans) == sum(len(panel.tokens) for panel in text_panels)
    assert "[PAD]" not in page  # padding is never drawn as a token
    assert page.count('class="legend"') == len(figure.panels)


def check_png(path) -> None:
    import matplotlib.image

    pixels = matplotlib.image.imread(path)
    assert pixels.shape[0] > 100 and pixels.std() > 0.01  # not blank


@pytest.mark.parametrize(("architecture", "head"), HEADS)
def test_every_head_is_drawn_as_html_and_png_or_says_why_not(architecture, head, tmp_path):
    model, tokenizer = tiny_model_and_tokenizer(architecture, head)
    pair = "the food was great" if head.inputs.pair else None
    if head.model_class.__name__ in NO_PICTURE:
        with pytest.raises(ValueError, match=r"no attention|nothing to draw"):
            visualize(model, tokenizer, TEXTS[0], pair=pair, **view_options(head, model))
        return
    figure = visualize(model, tokenizer, LONG_TEXT, pair=pair, **view_options(head, model))
    assert figure.panels
    check_page(figure.to_html(), figure)
    check_png(figure.save_png(tmp_path / "figure.png"))


def test_weights_are_drawn_as_computed_and_long_texts_stay_small():
    architecture = ARCHITECTURES["lin_self_attentive"]
    model, tokenizer = tiny_model_and_tokenizer(architecture, architecture.heads[0])
    text = " ".join(["the food was great and the service was awful"] * 12)[:600]
    figure = visualize(model, tokenizer, text)
    output = model(**tokenizer([text], return_tensors="pt"))
    hops = output.hop_attentions[0]
    summed = next(panel for panel in figure.panels if "summed" in panel.title)
    torch.testing.assert_close(torch.tensor(summed.weights), hops.sum(0), rtol=0, atol=1e-6)  # not renormalised
    assert len(figure.to_html().encode()) < 1_000_000


def test_bad_inputs_and_options_are_named():
    architecture = ARCHITECTURES["lin_self_attentive"]
    model, tokenizer = tiny_model_and_tokenizer(architecture, architecture.heads[0])
    with pytest.raises(ValueError, match="takes no option --top_k"):
        visualize(model, tokenizer, TEXTS[0], top_k=3)
    with pytest.raises(ValueError, match="`text` must be a non-empty string"):
        visualize(model, tokenizer, "  ")
    with pytest.raises(ValueError, match="too long to draw"):
        visualize(model, tokenizer, " ".join(["food"] * 600))
    few_shot = ARCHITECTURES["hapn"]
    model, tokenizer = tiny_model_and_tokenizer(few_shot, few_shot.heads[0])
    with pytest.raises(ValueError, match="pass `support`"):
        visualize(model, tokenizer, TEXTS[0])


def train_tiny(architecture, output: Path) -> None:
    """`hf-attn train` of a tiny model on the architecture's synthetic task: a few steps, saved with its card."""
    tiny = {key: value for key, value in architecture.tiny_config.items()
            if key not in ("vocab_size", "num_labels", "pad_token_id", "concept_vocab_size")}  # fmt: skip
    sizes = ["400", "200"] if architecture.synthetic_task.startswith("few_shot") else ["80", "24"]
    main(["train", "--arch", architecture.name, "--output_dir", str(output), "--max_steps", "3", "--num_train",
          sizes[0], "--num_eval", sizes[1], "--no-progress", "--logging_steps", "100",
          "--config", *(f"{key}={json.dumps(value)}" for key, value in tiny.items())])  # fmt: skip


@pytest.mark.parametrize("architecture", list(ARCHITECTURES.values()), ids=lambda row: row.name)
def test_a_trained_tiny_model_of_every_architecture_is_drawn_by_the_cli_and_in_its_card(architecture, tmp_path,
                                                                                         capsys):  # fmt: skip
    """`hf-attn train` draws the held-out example into the card's attention.png; `hf-attn visualize` writes the
    same example as HTML (checked in Chromium) and PNG."""
    output = tmp_path / "model"
    train_tiny(architecture, output)
    card = (output / "README.md").read_text()
    assert "![attention](attention.png)" in card
    check_png(output / "attention.png")
    example = json.loads((output / "hf_attn_training.json").read_text())["example"]
    arguments = [str(output), example["text"]]
    options = {}
    if "pair" in example:
        arguments += ["--pair", example["pair"]]
    if "support" in example:
        support = tmp_path / "support.jsonl"
        keys = ("label", "text", "head", "tail")
        support.write_text(
            "".join(json.dumps(dict(zip(keys, row, strict=False))) + "\n" for row in example["support"])
        )
        arguments += ["--support", str(support)]
        options["support"] = [tuple(row) for row in example["support"]]
    if "entities" in example:
        arguments += ["--entities", *map(str, example["entities"])]
        options["entities"] = example["entities"]
    capsys.readouterr()
    for suffix in ("html", "png"):
        main(["visualize", *arguments, "--out", str(tmp_path / f"picture.{suffix}")])
        assert f"wrote {tmp_path / f'picture.{suffix}'}" in capsys.readouterr().out
    check_png(tmp_path / "picture.png")
    model, tokenizer, _, _ = load_trained(str(output))
    figure = visualize(model, tokenizer, example["text"], pair=example.get("pair"), **options)
    page = tmp_path / "picture.html"
    assert page.read_text() == figure.to_html()  # the CLI's page is the figure's
    check_page(page.read_text(), figure)
    check_in_browser(page, figure, tmp_path)


def test_bertviz_reads_the_transformers_maps():
    pytest.importorskip("bertviz")
    from hf_attn import bertviz_view
    from hf_attn.tokenization.bpe import readable_tokens

    architecture = ARCHITECTURES["vaswani_transformer"]
    model, tokenizer = tiny_model_and_tokenizer(architecture, architecture.heads[0])
    for view in ("head", "model"):
        shown = bertviz_view(model, tokenizer, TEXTS[0], target="la comida era buena", view=view)
        assert type(shown).__module__.startswith(("IPython", "bertviz")), type(shown)
        # bertviz's page carries the maps and our decoder tokens, without BPE markers
        assert '"attn"' in shown.data and '"[BOS]"' in shown.data
        for token in readable_tokens(tokenizer.tokenize("la comida era buena")):  # as every picture shows them
            assert json.dumps(token) in shown.data


def test_inter_block_labels_follow_the_models_block_length():
    """9 tokens in blocks of 4: three blocks of 4, 4 and 1 tokens (the block length is read from the block maps, not
    guessed from the token count)."""
    architecture = ARCHITECTURES["biblosa"]
    head = architecture.heads[0]
    _, tokenizer = tiny_model_and_tokenizer(architecture, head)
    model = head.model_class(tiny_config(architecture, vocab_size=len(tokenizer), block_length=4)).eval()
    figure = visualize(model, tokenizer, TEXTS[0])
    inter = next(panel for panel in figure.panels if panel.title.startswith("inter block attentions, forward"))
    assert inter.row_labels == ["the food was great", "and the service was", "awful"]


def test_a_map_of_several_distributions_is_labelled_as_its_spec_declares_not_by_its_field_name():
    """What a map's rows are comes from its mask spec (`#hops`, `#labels`, `#features`), whatever the field is
    called: hops get their summed view, labels the config's names; an unknown meaning is refused, naming it."""
    from types import SimpleNamespace

    from hf_attn.data.masks import MaskSpec
    from hf_attn.visualization.views import field_panels

    tokenizer = corpus_tokenizer("word_level", ("a b c",))
    inputs = dict(tokenizer(["a b c"], return_tensors="pt"))
    weights = torch.softmax(torch.randn(1, 2, 3), dim=-1)
    config = SimpleNamespace(id2label={0: "sports", 1: "arts"})
    for spec, rows, summed in (("attention_mask#hops", ["hop 1", "hop 2"], True),
                               ("attention_mask#labels", ["sports", "arts"], False),
                               ("attention_mask#features", ["feature 1", "feature 2"], False),
                               ("attention_mask", ["row 1", "row 2"], False)):  # fmt: skip
        panels = field_panels(config, "weights", spec, weights, inputs, tokenizer, 1)  # a name that says nothing
        assert panels[0].row_labels == rows and (len(panels) == 2) == summed, spec
    with pytest.raises(ValueError, match="unknown rows 'heads'; known: hops, labels, features"):
        MaskSpec.parse("attention_mask#heads")

"""`hf-attn faithfulness` (`hf_attn.commands.faithfulness`) on a tiny model of every architecture whose heads
classify, trained for two steps on the example file of its layout: the figures come back as JSON, each with its
interval, for the head's own attention; bad input is one line naming the argument."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hf_attn.cli import main
from hf_attn.data.episodes import few_shot_classes, few_shot_relations
from hf_attn.models.bi_attention.synthetic_bi_attention import bilingual_evidence_documents
from hf_attn.registry.table import ARCHITECTURES
from hf_attn.tasks.examples import write_example_files
from tests.helpers import console_script, one_line_faults
from tests.training.test_preparation import QUIET

pytest.importorskip("captum", reason='the faithfulness extra: pip install "hf_attn[faithfulness]"')

# Each measured architecture, the example file it trains on and the columns it reads (`write_example_files`).
REVIEWS = ["reviews.csv", "--text_column", "review", "--label_column", "stars"]
PAIRS = ["snli.jsonl", "--text_column", "premise", "--text_pair_column", "hypothesis", "--label_column", "label"]
SNIPPETS = ["snippets/train.tsv", "--column_names", "text", "concepts", "label", "--concept_column", "concepts"]
MEASURED = {
    "lin_self_attentive": ("lin_self_attentive", REVIEWS),
    "lin_self_attentive-pair": ("lin_self_attentive", PAIRS),
    "han": ("han", REVIEWS),
    "biblosa": ("biblosa", REVIEWS),
    "biblosa-pair": ("biblosa", PAIRS),
    "lstmn": ("lstmn", REVIEWS),
    "lstmn-pair": ("lstmn", PAIRS),
    "attention_xml": ("attention_xml", ["topics.jsonl", "--text_column", "text", "--label_column", "labels"]),
    "stcka": ("stcka", SNIPPETS),
    "bi_attention": (
        "bi_attention",
        ["bilingual.jsonl", "--text_column", "text", "--text_pair_column", "translation", "--label_column", "label"],
    ),
    # A few-shot model trains on its classes and is measured on held-out ones, each query of an episode an example.
    "hapn": ("hapn", ["few-shot-train.jsonl", "--eval_dataset", "few-shot-held-out.jsonl"]),
    # Relations: HAPN's words with their entities' positions (which follow a removed token), Proto-HATT's support
    # instances (what its attention weighs, each erased whole).
    "hapn-relations": ("hapn", ["relations-train.jsonl", "--eval_dataset", "relations-held-out.jsonl"]),
    "proto_hatt": ("proto_hatt", ["relations-train.jsonl", "--eval_dataset", "relations-held-out.jsonl"]),
}
# The cases whose tiny config changes for their data (HAPN reads the relations' entity positions).
OVERRIDES = {"hapn-relations": {"use_entity_positions": True}}


@pytest.fixture(scope="module")
def example_files(tmp_path_factory):
    """The example files, and BI-Attention's labelled parallel documents (its synthetic task) as JSON lines."""
    folder = write_example_files(tmp_path_factory.mktemp("data"), num_rows=80)
    documents = bilingual_evidence_documents(80, seed=0, labelled_fraction=1.0)
    documents.select_columns(["text", "translation", "label"]).to_json(folder / "bilingual.jsonl")
    for name, split in (("few-shot-train", "train"), ("few-shot-held-out", "eval")):
        few_shot_classes(320, seed=0, split=split, num_train_classes=8, num_eval_classes=8).select_columns(
            ["text", "label"]
        ).to_json(folder / f"{name}.jsonl")
    for name, split in (("relations-train", "train"), ("relations-held-out", "eval")):
        few_shot_relations(320, seed=0, split=split, num_train_classes=8, num_eval_classes=8).select_columns(
            ["text", "label", "head", "tail"]
        ).to_json(folder / f"{name}.jsonl")
    return folder


def tiny(name: str, **overrides: object) -> list[str]:
    """`--config` of the architecture's tiny sizes (its vocabulary, labels and padding are the data's)."""
    sizes = {key: value for key, value in ARCHITECTURES[name].tiny_config.items()
             if key not in ("vocab_size", "num_labels", "pad_token_id", "concept_vocab_size")}  # fmt: skip
    return ["--config", *(f"{key}={json.dumps(value)}" for key, value in {**sizes, **overrides}.items())]


def trained(tmp_path, example_files, case: str) -> tuple[str, list[str]]:
    """A two-step model of `case` (`MEASURED`) on its example file, saved; returns its folder and the data options."""
    name, (file, *columns) = MEASURED[case]
    columns = [str(example_files / value) if value.endswith(".jsonl") else value for value in columns]
    data = ["--dataset", str(example_files / file), *columns]
    folder = tmp_path / case
    main(["train", "--arch", name, *data, "--output_dir", str(folder), "--max_steps", "2",
          *tiny(name, **OVERRIDES.get(case, {})),
          *[option for option in QUIET if option != "--save_strategy" and option != "no"]])  # fmt: skip
    return str(folder), data


# The default run measures Lin; the `long` tier every other architecture (the training takes a few seconds each).
CASES = [case if case == "lin_self_attentive" else pytest.param(case, marks=pytest.mark.long)
         for case in sorted(MEASURED)]  # fmt: skip


@pytest.mark.parametrize("case", CASES)
def test_the_command_measures_a_tiny_model_of_each_architecture(tmp_path, example_files, capsys, case):
    folder, data = trained(tmp_path, example_files, case)
    capsys.readouterr()
    output, plot = tmp_path / "figures" / "figures.json", tmp_path / "pictures" / "curves.png"  # folders made
    if "--eval_dataset" in data:  # the measured rows are the held-out classes'
        data = ["--dataset", data[data.index("--eval_dataset") + 1]]
    main(["faithfulness", folder, *data, "--max_examples", "6", "--ig_steps", "4", "--k", "10", "50",
          "--output_file", str(output), "--plot", str(plot)])  # fmt: skip
    printed = json.loads(capsys.readouterr().out)
    examples = printed["examples"]
    assert printed == json.loads(output.read_text()), printed
    episodic = ARCHITECTURES[MEASURED[case][0]].synthetic_task.startswith("few_shot")
    assert examples == 6 or (episodic and examples >= 6), printed  # episodes: whole ones of N·Q queries
    for ranking in ("attention", "integrated_gradients", "random"):
        assert len(printed["comprehensiveness"][ranking]) == 2 and printed["decision_flips"][ranking]["n"] == examples
    for reference in ("integrated_gradients", "gradient_x_input", "leave_one_out"):
        assert set(printed["agreement"][reference]) == {"attention", "random"}
    assert plot.stat().st_size > 10_000
    recorded = json.loads((Path(folder) / "hf_attn_faithfulness.json").read_text())
    assert recorded["examples"] == examples and recorded["dataset"] == Path(data[1]).name
    if case == "lin_self_attentive":  # the card gives the recorded figures a section
        main(["card", folder])
        card = (Path(folder) / "README.md").read_text()
        section = card[card.index("## How faithful is this attention?") : card.index("## Citation")]
        assert "on 6 texts of reviews.csv" in section and "| decision flips, top token removed |" in section


@pytest.fixture(scope="module")
def lin_folder(tmp_path_factory, example_files):
    return trained(tmp_path_factory.mktemp("lin"), example_files, "lin_self_attentive")


@pytest.mark.long
@pytest.mark.parametrize(
    ("given", "message"),
    [
        (["--k", "0"], r"--k 0: each k is a share of a text's tokens in \(0, 100\] %"),
        (["--label_column", "rating"], r"--label_column rating: --dataset .* has no labels"),
        (["--empty"], r"row 3 has an empty text \(review\)"),
    ],
    ids=["k out of range", "no labels", "an empty text"],
)
def test_bad_input_is_one_line_naming_the_argument(tmp_path, lin_folder, given, message):
    folder, data = lin_folder
    if given == ["--empty"]:
        rows = tmp_path / "reviews.csv"
        lines = Path(data[1]).read_text().splitlines()
        lines[4] = "3,"
        rows.write_text("\n".join(lines) + "\n")
        data, given = ["--dataset", str(rows), *data[2:]], []
    elif given[0] == "--label_column":
        data = data[:-2]
    result = subprocess.run([*console_script(), "faithfulness", folder, *data, *given], capture_output=True,
                            text=True, timeout=300)  # fmt: skip
    assert one_line_faults(result, message) == [], (result.stdout[-500:], result.stderr[-1500:])


def test_a_generating_model_is_refused_in_one_line(tmp_path, example_files):
    folder = tmp_path / "transformer"
    main(["train", "--arch", "vaswani_transformer", "--dataset", str(example_files / "pairs.tsv"), "--column_names",
          "source", "target", "--text_column", "source", "--target_column", "target", "--output_dir", str(folder),
          "--max_steps", "1", *tiny("vaswani_transformer"), "--no-progress", "--report_to", "none"])  # fmt: skip
    with pytest.raises(SystemExit) as exit_info:
        main(["faithfulness", str(folder), "--dataset", str(example_files / "pairs.tsv")])
    line = str(exit_info.value.code)
    assert "\n" not in line, line
    assert line.startswith("hf-attn faithfulness: VaswaniTransformerForConditionalGeneration generates its output")


# The heads that classify without attention over their tokens.
WITHOUT_ATTENTION = ["ElmoForTokenClassification", "ElmoForSequenceClassification",
                     "ProtoHattProtoNetForFewShotClassification", "SgmForMultiLabelClassification"]  # fmt: skip


@pytest.mark.parametrize("head", WITHOUT_ATTENTION)
def test_a_head_without_attention_over_its_tokens_is_refused_in_one_line(tmp_path, example_files, head):
    """ELMo's tagger and classifier (its scalar mix weighs layers, not tokens), the prototypical network without
    attention and SGM's classifier have no map to measure: one line says so, before any data is read. With
    these, every head `hf-attn list` has that classifies is either measured above or refused here."""
    architecture = next(
        row for row in ARCHITECTURES.values() if any(h.model_class.__name__ == head for h in row.heads)
    )
    model_class = next(h.model_class for h in architecture.heads if h.model_class.__name__ == head)
    model_class(architecture.config_class(**architecture.tiny_config)).save_pretrained(tmp_path / head)
    with pytest.raises(SystemExit) as exit_info:
        main(["faithfulness", str(tmp_path / head), "--dataset", str(example_files / "reviews.csv")])
    line = str(exit_info.value.code)
    assert "\n" not in line, line
    assert line.startswith(f"hf-attn faithfulness: {head} has no attention over the tokens of its text"), line


def test_without_captum_the_line_names_the_extra(lin_folder, monkeypatch):
    """Integrated Gradients come from Captum, an optional extra: where it is not installed (hidden from imports
    here), the command ends in one line that says how to install it."""
    folder, data = lin_folder
    monkeypatch.setitem(sys.modules, "captum", None)  # `import captum` then fails as for a missing package
    with pytest.raises(SystemExit) as exit_info:
        main(["faithfulness", folder, *data])
    line = str(exit_info.value.code)
    assert "\n" not in line and line.startswith("hf-attn faithfulness: Integrated Gradients need Captum"), line
    assert 'pip install "hf_attn[faithfulness]"' in line, line


def test_every_head_that_classifies_is_measured_or_refused_here():
    """The cases above cover the registry: each architecture with a head that classifies has a measured case or
    a refused head here (a new architecture's head fails this until it has one)."""
    from hf_attn.data.kinds import TokenVocabulary
    from hf_attn.faithfulness.measure import check_measurable

    measured = {MEASURED[case][0] for case in MEASURED}
    for name, architecture in ARCHITECTURES.items():
        for head in architecture.heads:
            if isinstance(head.labels, TokenVocabulary):
                continue  # generates: refused as the Transformer is (test_a_generating_model_is_refused_in_one_line)
            try:
                check_measurable(head)
            except ValueError:
                assert head.model_class.__name__ in WITHOUT_ATTENTION, head.model_class.__name__
            else:
                assert name in measured, name

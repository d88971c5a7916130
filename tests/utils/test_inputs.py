"""Every input a stage reads, named when it is wrong: through the real `hf-attn` console script, each
wrong input ends the command with exit status 1, exactly one line on standard error that names the option, the
input and what it is, nothing on standard output, and no output folder. Each stage's reading (`hf_attn.utils.inputs`:
a model folder, a tokenizer, the data, word vectors, an original checkpoint) meets two wrong inputs or more; options
that only some architectures or heads read are refused for the others, before any work; data read as the user
meant (a header row under `--column_names`, swapped text and label columns)."""

from __future__ import annotations

import subprocess
from collections import OrderedDict
from pathlib import Path

import pytest
import torch

from hf_attn.registry.table import ARCHITECTURES
from hf_attn.utils.inputs import MODEL, TOKENIZER, WORD_VECTORS, read_input, what_is
from tests.helpers import console_script, one_line_faults, run_console_commands, tiny_config

TEXTS = ["the food was good", "the service was bad", "a fine day", "a bad day"]


def _inputs(folder: Path) -> None:
    """The inputs of `STAGE_MISTAKES`: a saved Lin model with its tokenizer (`lin/`), data files, and files of every
    wrong kind."""
    from safetensors.torch import save_file

    from hf_attn import LinSelfAttentiveForSequenceClassification
    from hf_attn.tokenization import train_word_level_tokenizer

    torch.manual_seed(0)
    model = LinSelfAttentiveForSequenceClassification(tiny_config(ARCHITECTURES["lin_self_attentive"]))
    model.save_pretrained(folder / "lin")
    train_word_level_tokenizer(TEXTS).save_pretrained(folder / "lin")
    rows = "".join(f"text number {i} is here,{i % 2}\n" for i in range(30))
    (folder / "header.csv").write_text("text,label\n" + rows)
    (folder / "good.csv").write_text("text,label\nhi there,1\nyo man,0\nfine day,1\n")
    (folder / "notes").mkdir()
    (folder / "notes" / "notes.md").write_text("# what I meant to put here\n")
    (folder / "empty").mkdir()
    (folder / "broken-tokenizer").mkdir()
    (folder / "broken-tokenizer" / "tokenizer.json").write_text("{")
    torch.save({"weights": torch.ones(2)}, folder / "other.pt")
    torch.save([1, 2, 3], folder / "list.pt")
    save_file({"w": torch.ones(2)}, str(folder / "weights.safetensors"))


# Each mistake: the command line (IN: the folder of `_inputs`, OUT: a fresh folder), and what its one line says.
LIN = "IN/lin"
STAGE_MISTAKES = OrderedDict(
    {
        # A model folder (MODEL, MODEL_DIR, a converter's source folder)
        "predict on a weights file": (["predict", f"{LIN}/model.safetensors", "hi"],
                                      r"MODEL .*model\.safetensors is a saved model's weights .*not a model folder .*"
                                      r"give the folder that holds it"),
        "predict on a csv": (["predict", "IN/good.csv", "hi"], r"MODEL .*good\.csv is a CSV file, not a model folder"),
        "evaluate on a folder of notes": (["evaluate", "IN/notes", "--dataset", "IN/good.csv"],
                                          r"MODEL .*notes is a folder holding notes\.md, not a model folder"),
        "card of a csv": (["card", "IN/good.csv"], r"MODEL_DIR .*good\.csv is a CSV file, not a model folder"),
        "push a weights file": (["push", f"{LIN}/model.safetensors", "alice/m"],
                                r"MODEL_DIR .*model\.safetensors is a saved model's weights"),
        "marian conversion of a lin folder": (
            ["convert", "vaswani_transformer", "--source", "marian", "--checkpoint", LIN, "--output", "OUT"],
            r"--checkpoint .*lin is a lin_self_attentive model folder .*not a Marian model folder"),
        # A tokenizer
        "a csv as tokenizer": (["train", "--tokenizer", "IN/good.csv", "--output_dir", "OUT"],
                               r"--tokenizer .*good\.csv is a CSV file, not a tokenizer \(a folder holding "
                               r"tokenizer\.json, or a Hub id\)"),
        "a folder without a tokenizer": (["train", "--tokenizer", "IN/notes", "--output_dir", "OUT"],
                                         r"--tokenizer .*notes is a folder holding notes\.md, not a tokenizer"),
        "a tokenizer.json given for its folder": (["train", "--tokenizer", f"{LIN}/tokenizer.json", "--output_dir",
                                                   "OUT"], r"is a tokenizer's tokenizer\.json.*give the folder"),
        "a tokenizer that does not parse": (["train", "--tokenizer", "IN/broken-tokenizer", "--output_dir", "OUT"],
                                            r"--tokenizer .*broken-tokenizer \(a folder holding tokenizer\.json\) "
                                            r"does not read as a tokenizer"),
        # The output folder
        "an output folder that is a file": (["train", "--output_dir", "IN/good.csv", "--max_steps", "1"],
                                            r"--output_dir .*good\.csv is a file, not a folder"),
        # The data
        "a folder of notes as data": (["train", "--dataset", "IN/notes", "--output_dir", "OUT"],
                                      r"--dataset .*notes is a folder holding notes\.md, not a dataset"),
        "a model folder as data": (["train", "--dataset", LIN, "--output_dir", "OUT"],
                                   r"--dataset .*lin is a lin_self_attentive model folder .*not a dataset"),
        "an empty folder as data": (["evaluate", LIN, "--dataset", "IN/empty"],
                                    r"--dataset .*empty is an empty folder, not a dataset"),
        # Word vectors
        "a folder as word vectors": (["train", "--word_vectors", "IN/notes", "--output_dir", "OUT"],
                                     r"--word_vectors .*notes is a folder holding notes\.md, not a word vectors file"),
        "weights as word vectors": (["train", "--word_vectors", "IN/weights.safetensors", "--output_dir", "OUT"],
                                    r"--word_vectors .*weights\.safetensors is a safetensors weights file"),
        "a csv as word vectors": (["train", "--word_vectors", "IN/good.csv", "--output_dir", "OUT"],
                                  r"--word_vectors .*good\.csv holds no word vectors"),
        # An original checkpoint
        "a csv as Lin's checkpoint": (["convert", "lin_self_attentive", "--checkpoint", "IN/good.csv", "--output",
                                       "OUT"], r"--checkpoint .*good\.csv is a CSV file, not the original "
                                               r"implementation's PyTorch checkpoint"),
        "a list as Lin's checkpoint": (["convert", "lin_self_attentive", "--checkpoint", "IN/list.pt", "--output",
                                        "OUT"], r"--checkpoint .*list\.pt holds a list, not Lin et al\.'s checkpoint"),
        "another dict as SGM's checkpoint": (["convert", "sgm", "--checkpoint", "IN/other.pt", "--output", "OUT"],
                                             r"holds a dict of 'weights' \(no 'model', 'config'\), not SGM's"),
        "other weights as STCKA's": (["convert", "stcka", "--checkpoint", "IN/other.pt", "--output", "OUT"],
                                     r"--checkpoint .*other\.pt holds weights named weights, not STCKA's"),
        "other weights as Proto-HATT's": (["convert", "proto_hatt", "--checkpoint", "IN/other.pt", "--output", "OUT"],
                                          r"holds weights named weights, not FewShotREFramework's checkpoint"),
        "a weights file as AttentionXML's": (["convert", "attention_xml", "--checkpoint", "IN/weights.safetensors",
                                              "--output", "OUT"], r"is a safetensors weights file, not the original"),
        "a list as a fairseq checkpoint": (["convert", "vaswani_transformer", "--source", "fairseq", "--checkpoint",
                                            "IN/list.pt", "--output", "OUT"],
                                           r"holds a list, not a fairseq checkpoint"),
        "a csv as bilm-tf's options": (["convert", "elmo", "--options", "IN/good.csv", "--weights", "IN/other.pt",
                                        "--output", "OUT"], r"--options .*good\.csv is a CSV file, not bilm-tf's"),
        "a pickle as BiBloSA's variables": (["convert", "biblosa", "--checkpoint", "IN/other.pt", "--output", "OUT"],
                                            r"--checkpoint .*other\.pt is a PyTorch checkpoint, not the original's "
                                            r"variables"),
        # Options that only some architectures or heads read
        "a pair for a model of one text": (["predict", LIN, "hi", "--pair", "yo"],
                                           r"--pair: LinSelfAttentiveForSequenceClassification reads one text"),
        "a pair to draw for a model of one text": (["visualize", LIN, "hi", "--pair", "yo", "--out", "OUT.html"],
                                                   r"--pair .*reads one text, not a pair"),
        "a support set for a classifier": (["visualize", LIN, "hi", "--support", "a=b", "--out", "OUT.html"],
                                           r"takes no option --support"),
        "entities in a card's example": (["card", LIN, "--example", "hi", "--entities", "0", "1"],
                                         r"takes no option --entities"),
        "beams for a classifier": (["train", "--arch", "lin_self_attentive", "--num_beams", "4", "--output_dir",
                                    "OUT"], r"--num_beams 4: --arch lin_self_attentive generates nothing .*"
                                            r"sgm, vaswani_transformer"),
        "the noam schedule of another architecture": (
            ["train", "--arch", "han", "--schedule", "noam", "--output_dir", "OUT"],
            r"--schedule noam: a schedule of vaswani_transformer, which --arch han has not"),
        "a pair column for a model of one text": (["train", "--arch", "han", "--text_pair_column", "b",
                                                   "--output_dir", "OUT"], r"--arch han reads no pair"),
        "a target column for a classifier": (["train", "--arch", "han", "--target_column", "b", "--output_dir",
                                              "OUT"], r"--arch han writes no target text .*vaswani_transformer"),
        "episodes for a classifier": (["train", "--arch", "han", "--eval_episodes", "5", "--output_dir", "OUT"],
                                      r"--eval_episodes: --arch han trains on no few-shot episodes .*hapn"),
        "beams to score a classifier": (["evaluate", LIN, "--dataset", "IN/good.csv", "--num_beams", "3"],
                                        r"--num_beams 3: LinSelfAttentiveForSequenceClassification generates nothing"),
        "a pair column to score a model of one text": (
            ["evaluate", LIN, "--dataset", "IN/good.csv", "--text_pair_column", "label"],
            r"--text_pair_column label: .* reads one text, with no second text beside it"),
        # The data read as the user meant
        "column names in another order than the header": (
            ["train", "--dataset", "IN/header.csv", "--column_names", "label", "text", "--output_dir", "OUT"],
            r"--column_names label text: the first row of .*header\.csv \(text, label\) is a header"),
        "text and label columns swapped": (
            ["train", "--dataset", "IN/header.csv", "--text_column", "label", "--label_column", "text", "--output_dir",
             "OUT", "--max_steps", "1"],
            r"--label_column 'text' has \d+ different values in \d+ training rows.*are the two swapped\? "
            r"\(--text_column text --label_column label\)"),
        "text and label options naming one column": (
            ["train", "--dataset", "IN/header.csv", "--text_column", "text", "--label_column", "text", "--output_dir",
             "OUT"], r"--text_column and --label_column both name the column 'text'"),
    }
)  # fmt: skip


@pytest.mark.long  # fresh `hf-attn` processes, their time is start-up (`make test-long`)
def test_each_wrong_input_is_one_line_through_the_console_script(tmp_path):
    """Each of `STAGE_MISTAKES` as the real `hf-attn` runs it (`run_console_commands`: a sample in fresh processes,
    the rest in one interpreter): exit 1, one stderr line naming the input and the fault, nothing on stdout, no
    output folder (nor a picture) left behind."""
    inputs = tmp_path / "in"
    inputs.mkdir()
    _inputs(inputs)
    before = sorted(path.relative_to(inputs) for path in inputs.rglob("*"))
    jobs = []
    for index, (name, (argv, message)) in enumerate(STAGE_MISTAKES.items()):
        out = tmp_path / f"out-{index}"
        argv = [argument.replace("IN", str(inputs)).replace("OUT", str(out)) for argument in argv]
        jobs.append((name, argv, message, out))

    results = list(zip(jobs, run_console_commands([job[1] for job in jobs]), strict=True))
    failures = []
    for (name, _, message, out), result in results:
        faults = one_line_faults(result, message)
        if out.exists() or out.with_suffix(".html").exists():
            faults.append("an output was left")
        if faults:
            failures.append(f"{name}: {'; '.join(faults)}")
    assert not failures, "\n".join(failures)
    assert sorted(path.relative_to(inputs) for path in inputs.rglob("*")) == before  # no card, picture or cache


def test_column_names_over_a_header_row_skip_it_and_say_so(tmp_path):
    """`--column_names text label` on a file whose first row is `text,label`: the header is not a training row (30
    rows train, not 31), and the run says so; without a header row, every row is data."""
    inputs = tmp_path / "in"
    inputs.mkdir()
    _inputs(inputs)
    headless = inputs / "headless.csv"
    headless.write_text((inputs / "header.csv").read_text().split("\n", 1)[1])
    for data, said in ((inputs / "header.csv", True), (headless, False)):
        out = tmp_path / f"run-{data.stem}"
        result = subprocess.run(
            [*console_script(), "train", "--dataset", str(data), "--eval_dataset", str(data), "--column_names", "text",
             "label", "--output_dir", str(out), "--max_steps", "1", "--no-progress", "--report_to", "none",
             "--config", "hidden_size=8"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-2000:]
        assert "[hf-attn] data: 30 training rows" in result.stdout, result.stdout
        assert ("its first row is the header --column_names names (text, label)" in result.stdout) is said


def test_a_stage_names_its_input_and_keeps_our_own_messages_and_bugs(tmp_path):
    """`read_input` in the library: a library's error about the input becomes one `InputError` naming the option,
    the input, what it is and the library's words; hf_attn's own message passes through as it is; a bug of ours
    (a `KeyError` raised in hf_attn's code) keeps its type and traceback."""
    from transformers import AutoConfig

    from hf_attn.utils.inputs import InputError

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": ')
    with pytest.raises(InputError, match=r"^MODEL .*model \(a folder holding config\.json\) does not read as a model "
                                         r"folder .*: .*config.json"):  # fmt: skip
        read_input("MODEL", folder, MODEL, lambda: AutoConfig.from_pretrained(folder))
    with pytest.raises(FileNotFoundError, match=r"--tokenizer .*nope: no such file or folder"):
        read_input("--tokenizer", tmp_path / "nope", TOKENIZER, lambda: None)

    from hf_attn.data.masks import MaskSpec
    from hf_attn.options.reading import parse_overrides

    (tmp_path / "vectors.txt").write_text("a 1 2 3 4\n")
    with pytest.raises(ValueError, match=r"^Config overrides are KEY=VALUE, got 'x'") as raised:
        read_input("--word_vectors", tmp_path / "vectors.txt", WORD_VECTORS, lambda: parse_overrides(["x"]))
    assert type(raised.value) is ValueError  # hf_attn's own message, as it was
    with pytest.raises(KeyError, match="attention_mask"):  # a bug of ours keeps its type (and traceback)
        read_input("--word_vectors", tmp_path / "vectors.txt", WORD_VECTORS,
                   lambda: MaskSpec.parse("attention_mask").key_mask({}))  # fmt: skip


@pytest.mark.parametrize(
    ("make", "said"),
    [(lambda path: path.write_bytes(b"PK\x03\x04rest"), "a zip archive (a PyTorch checkpoint?)"),
     (lambda path: path.write_bytes(b"\x89HDF\r\n\x1a\n"), "an HDF5 file"),
     (lambda path: path.write_bytes(b"\x00\xff\xfe\x01"), "a binary file"),
     (lambda path: path.write_text("plain words\n"), "a text file"),
     (lambda path: path.write_bytes(b""), "an empty file")],
)  # fmt: skip
def test_what_a_file_without_a_suffix_is(tmp_path, make, said):
    path = tmp_path / "thing"
    make(path)
    assert what_is(path) == said

"""Reliability, round two (issue 36): what a hostile or unlucky user meets. Bad input is a named error, a kill during
a save leaves the earlier or the new weights, a trained model is never replaced silently, and every error names
the argument or the flag at fault. Each test here failed on main before issue 36."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap

import pytest
import torch

from hf_attn.models.stcka.tokenization_stcka import ConceptSource
from hf_attn.registry import get_architecture
from hf_attn.utils.locks import LOCK_NAME
from hf_attn.utils.saving import STAGING_PREFIX, last_complete_checkpoint
from tests.helpers import make_inputs, make_labels, tiny_config


def head_of(arch: str, class_name: str):
    architecture = get_architecture(arch)
    (head,) = [head for head in architecture.heads if head.model_class.__name__ == class_name]
    torch.manual_seed(0)
    config = tiny_config(architecture)
    return head.model_class(config).eval(), config, head


# ---------------------------------------------------------------------------------------------------------------
# Named errors
# ---------------------------------------------------------------------------------------------------------------


def test_sgm_decoder_mask_and_batch_must_fit_the_decoder_ids():
    model, config, head = head_of("sgm", "SgmForMultiLabelGeneration")
    inputs = make_inputs(head, config, [5, 3])
    decoder_ids = inputs.pop("decoder_input_ids")
    fits = inputs.pop("decoder_attention_mask")
    model(**inputs, decoder_input_ids=decoder_ids, decoder_attention_mask=fits)  # the right shape is accepted
    for bad in (fits[:, :-1], torch.cat([fits, fits[:, :1]], dim=1), fits[:1]):  # short, long, one row
        with pytest.raises(ValueError, match=r"`decoder_attention_mask` must have shape \(batch, steps\)"):
            model(**inputs, decoder_input_ids=decoder_ids, decoder_attention_mask=bad)
    with pytest.raises(ValueError, match=r"`decoder_input_ids` must have the batch size of `input_ids`"):
        model(**inputs, decoder_input_ids=decoder_ids[:1])


def test_sgm_global_embedding_trains_in_float16():
    """The masked global embedding's score for emitted labels (the original's −1e7) is past float16's range: it is
    applied in float32, so `Trainer(fp16=True)` and `model.half()` run."""
    architecture = get_architecture("sgm")
    head = architecture.heads[0]
    torch.manual_seed(0)
    config = tiny_config(architecture, global_embedding=True, global_embedding_source="masked")
    model = head.model_class(config).half().train()
    inputs = make_inputs(head, config, [5, 3])
    output = model(**inputs, labels=make_labels(head, config, inputs))
    assert torch.isfinite(output.loss)
    output.loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


@pytest.mark.parametrize(
    "class_name", ["ProtoHattForFewShotClassification", "ProtoHattProtoNetForFewShotClassification"]
)
def test_proto_hatt_entity_positions_must_lie_within_the_text(class_name):
    model, config, head = head_of("proto_hatt", class_name)
    inputs = make_inputs(head, config, [6, 4])
    model(**inputs)
    for name in ("entity_positions", "support_entity_positions"):
        for position in (10**6, inputs[name.replace("entity_positions", "input_ids")].size(-1)):
            bad = inputs[name].clone()
            bad.view(-1, 2)[0, 1] = position
            with pytest.raises(ValueError, match=rf"`{name}` holds token index {position} .* outside its text"):
                model(**{**inputs, name: bad})
        # Inside the padded width but past the text's own tokens: still outside the text.
        lengths = inputs[name.replace("entity_positions", "attention_mask")].sum(-1)
        bad = inputs[name].clone()
        bad[..., 0] = lengths
        with pytest.raises(ValueError, match=rf"`{name}` holds token index"):
            model(**{**inputs, name: bad})


def test_proto_hatt_sentence_encoder_checks_entity_positions_too():
    architecture = get_architecture("proto_hatt")
    config = tiny_config(architecture)
    model = architecture.base_model_class(config).eval()
    ids, mask = torch.tensor([[5, 6, 7, 0]]), torch.tensor([[1, 1, 1, 0]])
    model(input_ids=ids, attention_mask=mask, entity_positions=torch.tensor([[0, 2]]))
    with pytest.raises(ValueError, match=r"`entity_positions` holds token index 3 .* \(tail\), outside its text of 3"):
        model(input_ids=ids, attention_mask=mask, entity_positions=torch.tensor([[0, 3]]))


@pytest.mark.parametrize("top_k", [-1, 0])
def test_label_tree_top_k_must_be_at_least_one(top_k):
    model, config, head = head_of("attention_xml", "AttentionXmlForLabelTree")
    inputs = make_inputs(head, config, [5, 3])
    with pytest.raises(ValueError, match=r"`top_k` must be a whole number ≥ 1"):
        model(**inputs, top_k=top_k)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("latin1.tsv", b"apple\tfruit\t0.5\ncaf\xe9\tplace\t1\n", r"latin1\.tsv:2: not UTF-8"),
        ("broken.json", b'{"apple": [["fruit", 0.5]],\n "pear": [["fruit", 1]', r"broken\.json:2: invalid JSON"),
        ("words.json", b'{"apple": [["fruit", 0.5]],\n "pear": [["fruit", "high"]]}', r"words\.json:2: entity 'pear'"),
        ("nan.tsv", b"apple\tfruit\t0.5\npear\tfruit\tnan\n", r"nan\.tsv:2: the score 'nan' is not finite"),
        ("inf.tsv", b"apple\tfruit\tinf\n", r"inf\.tsv:1: the score 'inf' is not finite"),
        ("nan.json", b'{"apple": {"fruit": NaN}}', r"nan\.json:1: entity 'apple': the score nan is not finite"),
        ("list.json", b"[1, 2]", r"list\.json: expected a JSON object"),
    ],
)
def test_knowledge_base_faults_name_the_file_and_line(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        ConceptSource.from_file(path)


def test_knowledge_base_fields_of_any_size_are_read(tmp_path):
    """A 10 MB line is read (csv's field limit is 131,072 characters)."""
    path = tmp_path / "big.tsv"
    entity = "x" * 10_000_000
    path.write_text(f"entity\tconcept\tscore\napple\tfruit\t0.5\n{entity}\tthing\t1\n", encoding="utf-8")
    source = ConceptSource.from_file(path)
    assert source.entities["apple"] == [("fruit", 0.5)] and source.entities[entity] == [("thing", 1.0)]


def test_a_concept_source_built_in_code_refuses_non_finite_scores():
    with pytest.raises(ValueError, match=r"entity 'apple': the score nan is not finite"):
        ConceptSource({"apple": [("fruit", float("nan"))]})


# ---------------------------------------------------------------------------------------------------------------
# Training and conversion never replace a model silently; STCKA trains without concepts
# ---------------------------------------------------------------------------------------------------------------

TINY_RUN = {"arch": "lin_self_attentive", "num_train": 16, "num_eval": 8, "max_steps": 1, "batch_size": 8,
            "save_strategy": "no", "disable_tqdm": True, "report_to": "none",
            "config_overrides": {"embedding_size": 8, "hidden_size": 8, "attention_hidden_size": 8,
                                 "classifier_hidden_size": 8}}  # fmt: skip


def test_training_into_a_trained_model_is_refused_unless_asked(tmp_path):
    from hf_attn.training import train
    from hf_attn.utils.integrity import verify_folder

    folder = tmp_path / "run"
    train(folder, **{**TINY_RUN, "save_strategy": "steps", "save_steps": 1})
    checkpoint = folder / "checkpoint-1"  # written by Trainer through save_pretrained: staged, recorded, no leftovers
    assert verify_folder(checkpoint, require_record=True) == ["model.safetensors"]
    assert temporary_files(checkpoint) == [] and temporary_files(folder) == []
    weights = (folder / "model.safetensors").read_bytes()
    with pytest.raises(FileExistsError, match=r"already holds a saved model.*--overwrite_output_dir"):
        train(folder, **TINY_RUN, seed=1)
    assert (folder / "model.safetensors").read_bytes() == weights  # untouched
    train(folder, **TINY_RUN, seed=1, overwrite_output_dir=True)
    assert (folder / "model.safetensors").read_bytes() != weights
    assert temporary_files(folder) == []


def test_a_conversion_into_a_folder_holding_a_model_is_refused(tmp_path):
    from conversion.convert_lin_self_attentive_original_to_hf import main

    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(FileExistsError, match=r"already holds a saved model.*--overwrite"):
        main(["--checkpoint", str(tmp_path / "missing.pt"), "--output", str(tmp_path)])
    with pytest.raises(FileNotFoundError):  # with --overwrite it goes on (and finds no checkpoint)
        main(["--checkpoint", str(tmp_path / "missing.pt"), "--output", str(tmp_path), "--overwrite"])


def test_stcka_trains_without_concepts_and_errors_name_the_flags(tmp_path):
    """The paper's ablation without concepts (`--no_concepts`: every concept set empty); without a knowledge base
    or a concept column the error names the three flags, not internal objects."""
    from hf_attn.cli import main

    data = tmp_path / "reviews.csv"
    data.write_text("text,label\n" + "".join(f"good film {i},pos\nbad film {i},neg\n" for i in range(12)))
    common = ["train", "--arch", "stcka", "--dataset", str(data), "--max_steps", "2", "--no-progress",
              "--save_strategy", "no", "--report_to", "none"]  # fmt: skip
    with pytest.raises(SystemExit, match=r"--concepts FILE .*--concept_column COLUMN.*--no_concepts"):
        main([*common, "--output_dir", str(tmp_path / "missing")])
    with pytest.raises(SystemExit, match=r"--no_concepts trains without concepts: drop --concepts"):
        main([*common, "--output_dir", str(tmp_path / "both"), "--no_concepts", "--concepts", str(data)])
    main([*common, "--output_dir", str(tmp_path / "ablation"), "--no_concepts"])
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "ablation")
    encoded = tokenizer(["good film 3"], return_tensors="pt")
    assert encoded["concept_attention_mask"].sum() == 0  # an empty concept set: one padding position


# ---------------------------------------------------------------------------------------------------------------
# Atomic saves
# ---------------------------------------------------------------------------------------------------------------

# A ~100 MB model saved by forked children (the parent imports once). Each stdin line is `seed delay`: a child
# builds the model of that seed, prints its weights' fingerprint, tells the parent it starts `save_pretrained` and
# prints "saved" after it; the parent kills it `delay` seconds after the start (never when delay < 0) and prints
# "done <seconds from the start to the child's end>". The parent kills its own unreaped child: no pid reuse.
SAVER = textwrap.dedent(
    """
    import os, signal, sys, time
    import torch
    from hf_attn import LinSelfAttentiveConfig, LinSelfAttentiveForSequenceClassification

    folder = sys.argv[1]
    config = LinSelfAttentiveConfig(vocab_size=100_000, embedding_size=256, hidden_size=8, attention_hidden_size=8,
                                    classifier_hidden_size=8)
    for line in sys.stdin:
        seed, delay = line.split()
        started, ready = os.pipe()
        pid = os.fork()
        if pid == 0:
            torch.manual_seed(int(seed))
            model = LinSelfAttentiveForSequenceClassification(config)
            print("fingerprint", repr(float(model.get_input_embeddings().weight[:64].detach().double().sum())),
                  flush=True)
            os.write(ready, b"s")
            model.save_pretrained(folder)
            print("saved", flush=True)
            os._exit(0)
        os.read(started, 1)
        start = time.perf_counter()
        if float(delay) >= 0:
            time.sleep(float(delay))
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        print("done", time.perf_counter() - start, flush=True)
    """
)


def fingerprint_of(folder) -> float:
    from hf_attn.models.lin_self_attentive.modeling_lin_self_attentive import LinSelfAttentiveForSequenceClassification

    model = LinSelfAttentiveForSequenceClassification.from_pretrained(folder)
    return float(model.get_input_embeddings().weight[:64].detach().double().sum())


def temporary_files(folder) -> list[str]:
    """Names in `folder` that are not part of a saved model: staging folders, `.tmp` files."""
    return sorted(path.name for path in folder.iterdir() if path.name.startswith(".") or path.suffix == ".tmp")


def test_a_save_killed_at_ten_random_moments_leaves_the_earlier_or_the_new_weights(tmp_path):
    folder = tmp_path / "model"
    log = open(tmp_path / "saver.log", "w")  # noqa: SIM115
    saver = subprocess.Popen([sys.executable, "-c", SAVER, str(folder)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1)  # fmt: skip

    def save(seed: int, delay: float = -1.0) -> tuple[float, bool, float]:
        """The new weights' fingerprint, whether the save finished, and the seconds it ran."""
        saver.stdin.write(f"{seed} {delay}\n")
        saver.stdin.flush()
        fingerprint, finished = None, False
        while True:
            line = saver.stdout.readline().split()
            assert line, f"the saver stopped: {(tmp_path / 'saver.log').read_text()[-2000:]}"
            if line[0] == "fingerprint":
                fingerprint = float(line[1])
            elif line[0] == "saved":
                finished = True
            elif line[0] == "done":
                return fingerprint, finished, float(line[1])

    try:
        earlier, finished, duration = save(0)  # one whole save: the window the kills fall in
        assert finished and fingerprint_of(folder) == earlier and temporary_files(folder) == []
        moments, interrupted, kept_new = random.Random(36), 0, 0
        for seed in range(1, 11):
            new, finished, _ = save(seed, moments.uniform(0, 1.1 * duration))
            interrupted += not finished
            loaded = fingerprint_of(folder)
            assert loaded in (earlier, new), f"kill {seed}: the folder holds neither the earlier nor the new weights"
            kept_new += loaded == new
            earlier = loaded
            # A killed save leaves at most its staging folder and its lock file (which nobody holds: the OS released
            # the lock with the process), both removed by the next save.
            leftovers = temporary_files(folder)
            assert all(name.startswith(STAGING_PREFIX) or name == LOCK_NAME for name in leftovers), leftovers
        last, finished, _ = save(11)
        assert finished and fingerprint_of(folder) == last
        assert temporary_files(folder) == []  # the stale staging folders went with the next save
    finally:
        saver.stdin.close()
        saver.wait(timeout=60)
        log.close()
    print(f"{interrupted} of 10 kills fell inside a save of {duration:.2f} s; {kept_new} left the new weights")
    assert interrupted >= 3, f"only {interrupted} of 10 kills fell inside a save"


def test_a_save_over_an_earlier_one_removes_its_stale_shards(tmp_path):
    model, _, _ = head_of("lin_self_attentive", "LinSelfAttentiveForSequenceClassification")
    (tmp_path / "model-00001-of-00002.safetensors").write_bytes(b"old shard")
    (tmp_path / "model.safetensors.index.json").write_text("{}")
    (tmp_path / f"{STAGING_PREFIX}killed").mkdir()
    model.save_pretrained(tmp_path)
    names = sorted(path.name for path in tmp_path.iterdir())
    assert "model.safetensors" in names and "config.json" in names
    assert not [name for name in names if "-of-" in name or name.endswith(".index.json")]
    assert temporary_files(tmp_path) == []
    type(model).from_pretrained(tmp_path)


def test_resuming_skips_a_checkpoint_whose_save_was_killed(tmp_path):
    from safetensors.torch import save_file

    for step, complete in ((2, True), (4, True), (6, False)):
        checkpoint = tmp_path / f"checkpoint-{step}"
        checkpoint.mkdir()
        save_file({"weight": torch.zeros(2)}, checkpoint / "model.safetensors")
        if complete:
            (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    skipped = []
    assert last_complete_checkpoint(tmp_path, skipped.append) == str(tmp_path / "checkpoint-4")
    assert skipped == [f"skipped checkpoint-6: {tmp_path / 'checkpoint-6' / 'trainer_state.json'} is missing (the "
                       "save did not complete)"]  # fmt: skip
    assert last_complete_checkpoint(tmp_path / "none") is None

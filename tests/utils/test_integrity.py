"""Weights are checked before use: a flipped byte in a saved file (against the record in its own safetensors header)
or in a Hub-cache blob (against the hash it is named after) is refused with an error naming the file; a damaged
header names it too. A file another tool rewrote without a record loads."""

from __future__ import annotations

import shutil
import time

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from hf_attn.cli import main
from hf_attn.registry.table import get_architecture
from hf_attn.utils.integrity import RECORD_KEY, git_blob_sha1, sha256_of_file, verify_folder
from tests.helpers import make_inputs, tiny_config


def _saved(tmp_path):
    architecture = get_architecture("lin_self_attentive")
    head = architecture.heads[0]
    torch.manual_seed(0)
    model = head.model_class(tiny_config(architecture)).eval()
    folder = tmp_path / "model"
    model.save_pretrained(folder)
    return head.model_class, model, folder


def _flip_a_tensor_byte(path) -> None:
    """Flips one byte inside the tensor data (after the header): the file stays a valid safetensors file."""
    with safe_open(str(path), framework="pt") as handle:
        assert handle.keys()
    data = bytearray(path.read_bytes())
    header_size = int.from_bytes(data[:8], "little")
    data[8 + header_size + 5] ^= 0x40
    path.write_bytes(bytes(data))


def _metadata(path) -> dict:
    with safe_open(str(path), framework="pt") as handle:
        return handle.metadata()


def test_the_record_travels_inside_the_weights_and_from_pretrained_checks_it(tmp_path):
    model_class, model, folder = _saved(tmp_path)
    weights = folder / "model.safetensors"
    metadata = _metadata(weights)
    assert metadata["format"] == "pt" and len(metadata[RECORD_KEY]) == 64  # transformers' own metadata is kept
    inputs = make_inputs(get_architecture("lin_self_attentive").heads[0], model.config, [4, 2])
    torch.testing.assert_close(model_class.from_pretrained(folder)(**inputs).logits, model(**inputs).logits)

    moved = tmp_path / "elsewhere.safetensors"  # the record is the file's own: it holds wherever the file goes
    shutil.copy(weights, moved)
    _flip_a_tensor_byte(weights)
    with pytest.raises(OSError, match=r"model\.safetensors does not match the sha256 recorded in its header"):
        model_class.from_pretrained(folder)
    shutil.copy(moved, weights)
    model_class.from_pretrained(folder)


def test_a_file_rewritten_by_another_tool_loads(tmp_path):
    """A PEFT merge, quantisation or transformers' own tests write the file again without our record: it loads."""
    model_class, _, folder = _saved(tmp_path)
    weights = folder / "model.safetensors"
    tensors = {name: tensor * 2 for name, tensor in load_file(weights).items()}
    save_file(tensors, weights, metadata={"format": "pt"})
    reloaded = model_class.from_pretrained(folder)
    name = next(iter(tensors))
    torch.testing.assert_close(reloaded.state_dict()[name], tensors[name])


def test_a_damaged_header_is_reported_with_the_file_name(tmp_path):
    model_class, _, folder = _saved(tmp_path)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:8] + b"\xff\xfe" + weights.read_bytes()[10:])
    with pytest.raises(OSError, match=r"model\.safetensors is not a readable safetensors file"):
        model_class.from_pretrained(folder)


def test_cli_verify(tmp_path, capsys):
    _, _, folder = _saved(tmp_path)
    main(["verify", str(folder)])
    assert "model.safetensors match their integrity records" in capsys.readouterr().out
    _flip_a_tensor_byte(folder / "model.safetensors")
    with pytest.raises(SystemExit, match=r"model\.safetensors does not match the sha256 recorded"):
        main(["verify", str(folder)])
    main(["verify", str(folder), "--update"])  # changed on purpose: record the new content
    assert verify_folder(folder) == ["model.safetensors"]
    weights = folder / "model.safetensors"
    save_file(load_file(weights), weights, metadata={"format": "pt"})
    with pytest.raises(SystemExit, match="no weight file carries an integrity record"):
        main(["verify", str(folder)])


def test_trainer_checkpoints_carry_the_record(tmp_path):
    from transformers import Trainer, TrainingArguments

    from hf_attn.data import PaddingCollator

    architecture = get_architecture("lin_self_attentive")
    head = architecture.heads[0]
    config = tiny_config(architecture)
    rows = [{"input_ids": [1 + i, 2 + i, 3], "labels": i % 3} for i in range(4)]
    args = TrainingArguments(
        output_dir=str(tmp_path), max_steps=1, per_device_train_batch_size=2, report_to="none", use_cpu=True
    )
    Trainer(model=head.model_class(config), args=args, train_dataset=rows, data_collator=PaddingCollator(0)).train()
    assert verify_folder(tmp_path / "checkpoint-1") == ["model.safetensors"]


def test_git_blob_sha1_is_gits_object_id(tmp_path):
    path = tmp_path / "file.txt"
    path.write_bytes(b"hello\n")
    assert git_blob_sha1(path) == "ce013625030ba8dba906f756967f9e9ca394464a"  # `git hash-object file.txt`


def test_verification_cost_is_one_sha256_pass(tmp_path):
    """Not a timing assertion: prints the cost of checking 100 MB for the record (pytest -s)."""
    path = tmp_path / "big.safetensors"
    path.write_bytes(bytes(100 * 2**20))
    start = time.perf_counter()
    sha256_of_file(path)
    print(f"sha256 of 100 MB: {time.perf_counter() - start:.3f} s")

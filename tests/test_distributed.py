"""`accelerate launch --multi_gpu --num_processes 2` runs the training entry point as one 2-process (gloo) job, and
the saved model loads afterwards."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

import hf_attn  # noqa: F401


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launch_two_processes(tmp_path: Path, arguments: list[str]) -> str:
    """`accelerate launch --multi_gpu --num_processes 2 -m hf_attn.commands.train ARGUMENTS`; returns the output."""
    accelerate = shutil.which("accelerate", path=str(Path(sys.executable).parent)) or shutil.which("accelerate")
    assert accelerate, "accelerate's launcher is not installed"
    command = [
        accelerate, "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no",
        "--dynamo_backend", "no", "--main_process_port", str(free_port()), "-m", "hf_attn.commands.train", *arguments,
    ]  # fmt: skip
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf_home"), "OMP_NUM_THREADS": "1", "ACCELERATE_CONFIG_FILE": ""}
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-4000:]
    return log


def rank_lines(log: str, steps: int) -> dict[int, str]:
    """Each rank's report line; both ranks must have joined one 2-process group and trained `steps` steps."""
    lines = {}
    for rank in (0, 1):
        line = next((line for line in log.splitlines() if f"[hf-attn] rank {rank}/2: {steps} steps" in line), None)
        assert line is not None, log[-4000:]
        lines[rank] = line
    return lines


def vocabulary_hash(line: str) -> str:
    """The 12-hex-digit vocabulary hash of a rank's line (the other rank's output may share the line: both print to
    one stream, so only the hash itself is compared)."""
    match = re.search(r"vocabulary ([0-9a-f]{12})", line)
    assert match is not None, line
    return match.group(1)


def test_two_process_training_with_accelerate_launch(tmp_path):
    output = tmp_path / "model"
    log = launch_two_processes(
        tmp_path,
        ["--output-dir", str(output), "--num-train", "256", "--num-eval", "64", "--max-steps", "6", "--batch-size",
         "8", "--no-progress", "--config", "embedding_size=8", "hidden_size=8", "attention_hidden_size=8",
         "attention_hops=2", "classifier_hidden_size=8"],
    )  # fmt: skip
    lines = rank_lines(log, 6)
    assert vocabulary_hash(lines[0]) == vocabulary_hash(lines[1])
    assert not list(output.glob("*.bin")) and (output / "training_args.json").is_file()
    model = AutoModelForSequenceClassification.from_pretrained(output).eval()
    tokenizer = AutoTokenizer.from_pretrained(output)
    with torch.no_grad():
        logits = model(**tokenizer(["the food was great"], return_tensors="pt")).logits
    assert logits.shape == (1, 2) and torch.isfinite(logits).all()


def test_two_process_seq2seq_training_shares_one_vocabulary(tmp_path):
    """The BPE trainer numbers tokens differently in different processes: the ranks must still agree."""
    output = tmp_path / "transformer"
    log = launch_two_processes(
        tmp_path,
        ["--arch", "vaswani_transformer", "--output-dir", str(output), "--num-train", "256", "--num-eval", "16",
         "--max-steps", "4", "--batch-size", "8", "--no-progress", "--config", "d_model=16", "encoder_layers=1",
         "decoder_layers=1", "encoder_attention_heads=2", "decoder_attention_heads=2", "encoder_ffn_dim=32",
         "decoder_ffn_dim=32"],
    )  # fmt: skip
    lines = rank_lines(log, 4)
    assert vocabulary_hash(lines[0]) == vocabulary_hash(lines[1])
    assert (output / "tokenizer.json").is_file() and (output / "model.safetensors").is_file()

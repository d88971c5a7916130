"""`accelerate launch --multi_gpu --num_processes 2` runs the training entry point as one 2-process (gloo) job, and
the saved model loads afterwards."""

from __future__ import annotations

import os
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


def test_two_process_training_with_accelerate_launch(tmp_path):
    accelerate = shutil.which("accelerate", path=str(Path(sys.executable).parent)) or shutil.which("accelerate")
    assert accelerate, "accelerate's launcher is not installed"
    output = tmp_path / "model"
    command = [
        accelerate,
        "launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        str(free_port()),
        "-m",
        "hf_attn.training",
        "--output-dir",
        str(output),
        "--num-train",
        "256",
        "--num-eval",
        "64",
        "--max-steps",
        "6",
        "--batch-size",
        "8",
        "--no-progress",
        "--config",
        "embedding_size=8",
        "hidden_size=8",
        "attention_hidden_size=8",
        "attention_hops=2",
        "classifier_hidden_size=8",
    ]
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf_home"), "OMP_NUM_THREADS": "1", "ACCELERATE_CONFIG_FILE": ""}
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-4000:]
    for rank in (0, 1):  # both ranks joined one 2-process group and trained the same 6 steps
        assert f"[hf-attn] rank {rank}/2: 6 steps" in log, log[-4000:]
    assert not list(output.glob("*.bin")) and (output / "training_args.json").is_file()
    model = AutoModelForSequenceClassification.from_pretrained(output).eval()
    tokenizer = AutoTokenizer.from_pretrained(output)
    with torch.no_grad():
        logits = model(**tokenizer(["the food was great"], return_tensors="pt")).logits
    assert logits.shape == (1, 2) and torch.isfinite(logits).all()

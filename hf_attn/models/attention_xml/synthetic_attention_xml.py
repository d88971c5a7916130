"""AttentionXML's example data: the extreme multi-label text layout of its original and of the Extreme Classification
Repository's raw-text sets (`train_texts.txt` beside `train_labels.txt`, ...; `hf_attn.data.files.load_xmc_text_folder`
reads it), written from the shared `xmc_documents` generator (power-law label frequencies).
"""

from __future__ import annotations

from pathlib import Path

from hf_attn.data.synthetic import xmc_documents

__all__ = ["example_files"]


def example_files(folder: Path, num_rows: int, seed: int) -> None:
    """`folder/xmc/`: 4 × `num_rows` texts over 64 labels, most of them rare (more texts than the other example files
    have), the last tenth as `test_*` (the row's `example_files`)."""
    xmc = folder / "xmc"
    xmc.mkdir(parents=True, exist_ok=True)
    size = 4 * num_rows
    rows, held_out = xmc_documents(size, num_labels=64, seed=seed), max(1, size // 10)
    for split, part in (
        ("train", rows.select(range(size - held_out))),
        ("test", rows.select(range(size - held_out, size))),
    ):
        (xmc / f"{split}_texts.txt").write_text("\n".join(part["text"]) + "\n")
        (xmc / f"{split}_labels.txt").write_text("\n".join(" ".join(labels) for labels in part["labels"]) + "\n")

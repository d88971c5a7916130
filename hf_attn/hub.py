"""Sharing on the Hugging Face Hub: push a saved model folder (weights, code, tokenizer, card) to a repo."""

from __future__ import annotations

from pathlib import Path

from huggingface_hub import CommitInfo, HfApi

from .cards import write_model_card
from .utils.locks import LOCK_NAME
from .utils.paths import check_repo_id
from .utils.saving import STAGING_PREFIX

# Never uploaded: pickles, Trainer scratch (checkpoints at any depth: ELMo's biLM stage keeps its own in bilm/) and
# what a killed save left (its staging folder, removed by the next save), and the lock of the run that pushes.
IGNORE_PATTERNS = ["*.bin", "*.pt", "*.pth", "*.pkl", "*checkpoint-*/*", "runs/*", ".ipynb_checkpoints/*",
                   f"{STAGING_PREFIX}*/*", LOCK_NAME]  # fmt: skip


def push_model_dir(
    model_dir: str | Path,
    repo_id: str,
    private: bool = False,
    revision: str | None = None,
    token: str | None = None,
    commit_message: str | None = None,
) -> CommitInfo:
    """Creates `repo_id` if needed (and the `revision` branch), makes sure the folder has a model card, and
    uploads the folder in one commit. Returns the commit (its `oid` pins this version for `from_pretrained`)."""
    check_repo_id(repo_id)
    model_dir = Path(model_dir)
    if not (model_dir / "config.json").is_file():
        raise ValueError(f"{model_dir} is not a saved model folder (no config.json).")
    if not (model_dir / "README.md").is_file():
        write_model_card(model_dir, repo_id=repo_id)
    api = HfApi(token=token)
    api.create_repo(repo_id, private=private, exist_ok=True)
    if revision not in (None, "main"):
        api.create_branch(repo_id, branch=revision, exist_ok=True)
    return api.upload_folder(
        folder_path=model_dir,
        repo_id=repo_id,
        revision=revision,
        commit_message=commit_message or f"Upload {model_dir.name} with hf_attn",
        ignore_patterns=IGNORE_PATTERNS,
    )

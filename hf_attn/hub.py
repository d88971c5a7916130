"""Sharing on the Hugging Face Hub: push a saved model folder (weights, code, tokenizer, card) to a repo."""

from __future__ import annotations

from pathlib import Path

from huggingface_hub import CommitInfo, HfApi

from .cards import write_model_card
from .utils.hub_faults import transfer_fault, transfer_file
from .utils.inputs import MODEL_FOLDER, check_input
from .utils.locks import LOCK_NAME
from .utils.paths import check_repo_id
from .utils.saving import STAGING_PREFIX

# Never uploaded: pickles, Trainer scratch (checkpoints at any depth: ELMo's biLM stage keeps its own in bilm/) and
# what a killed save left (its staging folder, removed by the next save), and the lock of the run that pushes.
IGNORE_PATTERNS = [
    "*.bin",
    "*.pt",
    "*.pth",
    "*.pkl",
    "*checkpoint-*/*",
    "runs/*",
    ".ipynb_checkpoints/*",
    f"{STAGING_PREFIX}*/*",
    LOCK_NAME,
]


def push_model_dir(
    model_dir: str | Path,
    repo_id: str,
    private: bool = False,
    revision: str | None = None,
    token: str | None = None,
    commit_message: str | None = None,
) -> CommitInfo:
    """Creates `repo_id` if needed (and the `revision` branch), makes sure the folder has a model card, and
    uploads the folder in one commit. Returns the commit (its `oid` pins this version for `from_pretrained`). A
    transfer that fails (the network, the Hub's answer, the token) raises `PushError`, one line with the cause, the
    file, and what the branch holds now: a failed upload commits nothing, so the Hub keeps its last revision."""
    check_repo_id(repo_id)
    model_dir = Path(model_dir)
    check_input("MODEL_DIR", model_dir, MODEL_FOLDER)
    if not (model_dir / "README.md").is_file():
        write_model_card(model_dir, repo_id=repo_id)
    api = HfApi(token=token)
    branch = revision or "main"
    before = _head(api, repo_id, branch)
    try:
        api.create_repo(repo_id, private=private, exist_ok=True)
        if branch != "main":
            api.create_branch(repo_id, branch=branch, exist_ok=True)
        return api.upload_folder(
            folder_path=model_dir,
            repo_id=repo_id,
            revision=revision,
            commit_message=commit_message or f"Upload {model_dir.name} with hf_attn",
            ignore_patterns=IGNORE_PATTERNS,
        )
    except Exception as error:
        fault = transfer_fault(error)
        if fault is None:
            raise
        file = transfer_file(error)
        raise PushError(
            f"pushing {model_dir} to {repo_id} failed{f' on {file}' if file else ''}: {fault}. "
            f"{_now_holds(api, repo_id, branch, before)}"
        ) from error


class PushError(OSError):
    """A push that failed in transfer: its cause and file, and what the Hub's branch holds now."""


def _head(api: HfApi, repo_id: str, branch: str) -> str | None:
    """The commit `branch` of `repo_id` points at (`None`: no such repo or branch, or the Hub does not answer)."""
    try:
        return api.repo_info(repo_id, revision=branch).sha
    except Exception:  # a missing repo or branch, the network: the push itself tells what is wrong
        return None


def _now_holds(api: HfApi, repo_id: str, branch: str, before: str | None) -> str:
    """What `branch` of `repo_id` holds after a failed push, as a sentence: unchanged (nothing was committed), or
    where it points now, or that the Hub could not be asked."""
    now = _head(api, repo_id, branch)
    if now is not None and now == before:
        return f"Nothing was committed: {repo_id}@{branch} is unchanged at commit {now[:12]}; push again to retry."
    if now is None and before is None:
        return f"Nothing was committed: {repo_id} has no {branch} commit yet; push again to retry."
    if now is None:
        return f"The Hub did not answer what {repo_id}@{branch} holds now (it was at commit {before[:12]})."
    return f"{repo_id}@{branch} is now at commit {now[:12]} (was {before[:12] if before else 'none'})."

"""Weights are checked before they are used: a flipped byte in a tensor loads without any error otherwise.

Two checks, both before `from_pretrained` reads a tensor (called by the loading mixin, `hf_attn.utils.loading`):

- **Hub downloads.** The cache names every file after its hash: an LFS blob after the sha256 of its content, a
  plain git blob after its git sha1. `verify_hub_weights` downloads the weight files (as `from_pretrained` would),
  hashes them and compares; a mismatch evicts the file and raises an `OSError` naming it, so a retry downloads it
  again.
- **Local folders.** `save_pretrained` of every hf_attn model (so `Trainer` checkpoints and `hf-attn train` too)
  writes `checksums.json`, the sha256 of each weight file; `from_pretrained` checks the files it lists, and
  `hf-attn verify DIR` does the same on demand. A folder without the manifest loads as before.

Cost: one sha256 pass over the weights, about 0.15 s per 100 MB on one core of the CI machine
(`tests/test_integrity.py -s` prints it).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

MANIFEST_NAME = "checksums.json"
WEIGHT_SUFFIXES = (".safetensors", ".safetensors.index.json")


def _hexdigest(path: str | os.PathLike, digest: hashlib._Hash) -> str:
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_of_file(path: str | os.PathLike) -> str:
    """The hex sha256 of a file's content."""
    return _hexdigest(path, hashlib.sha256())


def git_blob_sha1(path: str | os.PathLike) -> str:
    """The git object id of a file (sha1 of `blob <size>\\0` + content), the name the Hub cache gives a plain file."""
    return _hexdigest(path, hashlib.sha1(f"blob {os.path.getsize(path)}\0".encode()))


def blob_matches_its_name(blob: str | os.PathLike) -> bool | None:
    """Whether a Hub-cache blob's content hashes to its file name (sha256 for LFS files, git sha1 for the others);
    `None` when the name is not a hash (not a cache blob)."""
    name = os.path.basename(blob)
    if re.fullmatch(r"[0-9a-f]{64}", name):
        return sha256_of_file(blob) == name
    if re.fullmatch(r"[0-9a-f]{40}", name):
        return git_blob_sha1(blob) == name
    return None


# ---------------------------------------------------------------------------------------------------------------
# Local folders: the manifest
# ---------------------------------------------------------------------------------------------------------------


def weight_files(folder: str | os.PathLike) -> list[Path]:
    """The weight files of a saved model folder (`*.safetensors` and their shard index)."""
    return sorted(path for path in Path(folder).iterdir() if path.name.endswith(WEIGHT_SUFFIXES) and path.is_file())


def write_manifest(folder: str | os.PathLike) -> Path:
    """Writes `checksums.json` (sha256 per weight file) into a saved model folder; returns its path."""
    folder = Path(folder)
    files = {path.name: sha256_of_file(path) for path in weight_files(folder)}
    manifest = folder / MANIFEST_NAME
    manifest.write_text(json.dumps({"algorithm": "sha256", "files": files}, indent=2, sort_keys=True) + "\n")
    return manifest


def verify_folder(folder: str | os.PathLike, require_manifest: bool = False) -> list[str]:
    """Checks a saved model folder's weight files against its `checksums.json`; returns the names checked.

    Raises `OSError` naming the first file that is missing or whose content changed, or (with `require_manifest`)
    naming the missing manifest. A folder without a manifest passes unchecked otherwise.
    """
    folder = Path(folder)
    manifest = folder / MANIFEST_NAME
    if not manifest.is_file():
        if require_manifest:
            raise OSError(f"{manifest} does not exist: this folder was not saved by hf_attn, nothing to verify.")
        return []
    try:
        listed = json.loads(manifest.read_text())["files"]
    except (ValueError, KeyError, TypeError) as error:
        raise OSError(f"{manifest} is not a valid checksum manifest: {error}") from error
    for name, expected in sorted(listed.items()):
        path = folder / name
        if not path.is_file():
            raise OSError(f"{path} is listed in {MANIFEST_NAME} but missing.")
        if sha256_of_file(path) != expected:
            raise OSError(
                f"{path} does not match its sha256 in {MANIFEST_NAME}: the file is corrupted or was changed after "
                f"saving. Restore it, or if you changed it on purpose, save the model again (or delete {manifest})."
            )
    return sorted(listed)


# ---------------------------------------------------------------------------------------------------------------
# Hub downloads
# ---------------------------------------------------------------------------------------------------------------


def verify_hub_weights(repo_id: str, kwargs: dict) -> list[str]:
    """Downloads (or finds in the cache) the weight files of `repo_id` as `from_pretrained(**kwargs)` would, and
    checks each against the hash its cache blob is named after; returns the names checked.

    A mismatch evicts the file from the cache and raises `OSError` naming it. Anything else that goes wrong
    (no such repo, no network, no safetensors) is left to `from_pretrained` to report.
    """
    from huggingface_hub import hf_hub_download

    options = {
        "revision": kwargs.get("revision"),
        "cache_dir": kwargs.get("cache_dir"),
        "token": kwargs.get("token"),
        "local_files_only": bool(kwargs.get("local_files_only", False)),
        "subfolder": kwargs.get("subfolder") or None,
    }
    try:
        try:
            paths = [hf_hub_download(repo_id, "model.safetensors", **options)]
        except Exception:  # a sharded checkpoint: the index names the shards
            index = hf_hub_download(repo_id, "model.safetensors.index.json", **options)
            shards = sorted(set(json.loads(Path(index).read_text())["weight_map"].values()))
            paths = [hf_hub_download(repo_id, shard, **options) for shard in shards]
    except Exception:
        return []
    for path in paths:
        blob = os.path.realpath(path)
        if blob_matches_its_name(blob) is False:
            os.remove(path)
            os.remove(blob)
            raise OSError(
                f"The cached {os.path.basename(path)} of {repo_id} ({blob}) does not match the hash it is named "
                "after: it was corrupted in transit or on disk. It was removed from the cache; retry to download it "
                "again."
            )
    return [os.path.basename(path) for path in paths]


def verify_before_load(pretrained_model_name_or_path, kwargs: dict) -> None:
    """What the loading mixin runs before `from_pretrained`: a local folder is checked against its manifest, a Hub
    repo's downloaded weights against their cache names. Raises `OSError` naming the bad file."""
    location = str(pretrained_model_name_or_path)
    if os.path.isdir(location):
        verify_folder(os.path.join(location, kwargs.get("subfolder") or ""))
    elif not os.path.exists(location):
        verify_hub_weights(location, kwargs)


def name_unreadable_weights(folder: str | os.PathLike) -> OSError | None:
    """An `OSError` naming the first weight file of a local folder whose safetensors header cannot be read (the
    safetensors library's own message does not name the file), or `None` when every header reads."""
    from safetensors import safe_open

    for path in weight_files(folder):
        if path.name.endswith(".safetensors"):
            try:
                with safe_open(str(path), framework="pt"):
                    pass
            except Exception as error:
                return OSError(f"{path} is not a readable safetensors file ({error}); it is damaged or truncated.")
    return None

"""Keeping the Hub download cache honest (`hf_attn.utils.hub_cache`): a cached weight file whose content does not
hash to its blob's name is evicted, so that a retry downloads it again; a sound one, and anything not in the
cache, is left alone. The cache is laid out as huggingface_hub lays it out (refs, snapshots, blobs)."""

from __future__ import annotations

import hashlib
import os

from hf_attn.utils.hub_cache import evict_corrupt_downloads, explain_load_failure

REVISION = "0123456789abcdef0123456789abcdef01234567"


def cache_repo(cache, repo_id: str, files: dict[str, bytes], corrupt: set[str] = frozenset()) -> None:
    """A snapshot of `repo_id` in `cache` holding `files`, each a link to its blob named by its sha256 (the bytes
    of those in `corrupt` changed after the download)."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(REVISION)
    snapshot, blobs = repo / "snapshots" / REVISION, repo / "blobs"
    snapshot.mkdir(parents=True)
    blobs.mkdir()
    for name, content in files.items():
        blob = blobs / hashlib.sha256(content).hexdigest()
        blob.write_bytes(content[:-1] + b"!" if name in corrupt else content)
        os.symlink(os.path.relpath(blob, snapshot), snapshot / name)


def test_a_corrupt_weight_file_is_evicted_and_the_error_says_to_retry(tmp_path):
    files = {"config.json": b'{"model_type": "x"}', "model.safetensors": b"weights" * 10, "extra.safetensors": b"ok"}
    cache_repo(tmp_path, "alice/model", files, corrupt={"model.safetensors"})
    error = explain_load_failure(OSError("cannot load"), "alice/model", {"cache_dir": str(tmp_path)})
    assert isinstance(error, OSError) and "model.safetensors of alice/model did not match its hash" in str(error)
    snapshot = tmp_path / "models--alice--model" / "snapshots" / REVISION
    assert sorted(path.name for path in snapshot.iterdir()) == ["config.json", "extra.safetensors"]
    assert evict_corrupt_downloads("alice/model", cache_dir=str(tmp_path)) == []  # nothing left to evict


def test_sound_files_and_repos_not_cached_are_left_alone(tmp_path):
    cache_repo(tmp_path, "bob/model", {"config.json": b"{}", "model.safetensors": b"weights"})
    assert evict_corrupt_downloads("bob/model", cache_dir=str(tmp_path)) == []
    assert evict_corrupt_downloads("nobody/model", cache_dir=str(tmp_path)) == []
    cause = ConnectionError("network unreachable")
    error = OSError("We couldn't connect to load this model")
    error.__cause__ = cause
    explained = explain_load_failure(error, "nobody/model", {"cache_dir": str(tmp_path)})
    assert str(explained).endswith("Caused by ConnectionError: network unreachable")

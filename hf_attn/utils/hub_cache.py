"""Keeping the Hub download cache honest.

`huggingface_hub` checks a download's size, so a cut connection never leaves a trusted file; it does not check the
content, so bytes corrupted in flight would stay in the cache and be trusted again on every retry. Model files call
`evict_corrupt_downloads` when loading fails: every cached `*.safetensors` of that revision whose sha256 differs
from its LFS etag is removed, so the next attempt downloads it again.
"""

from __future__ import annotations

import hashlib
import os
import re


def evict_corrupt_downloads(repo_id: str, revision: str | None = None, cache_dir: str | None = None) -> list[str]:
    """Removes cached `*.safetensors` files of `repo_id@revision` whose content does not hash to their etag.

    Returns the names of the evicted files (empty for local folders and repos not in the cache).
    """
    from huggingface_hub import try_to_load_from_cache

    config_path = try_to_load_from_cache(repo_id, "config.json", cache_dir=cache_dir, revision=revision)
    if not isinstance(config_path, str):
        return []
    snapshot = os.path.dirname(config_path)
    evicted = []
    for name in sorted(os.listdir(snapshot)):
        path = os.path.join(snapshot, name)
        blob = os.path.realpath(path)
        expected = os.path.basename(blob)
        if not name.endswith(".safetensors") or not re.fullmatch(r"[0-9a-f]{64}", expected):
            continue  # only LFS files are named by their sha256
        digest = hashlib.sha256()
        with open(blob, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        if digest.hexdigest() != expected:
            os.remove(path)
            os.remove(blob)
            evicted.append(name)
    return evicted

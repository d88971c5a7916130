"""Keeping the Hub download cache honest.

`huggingface_hub` checks a download's size, so a cut connection never leaves a trusted file; it does not check the
content, so bytes corrupted in flight would stay in the cache and be trusted again on every retry. When loading an
hf_attn model fails, its loading mixin (`hf_attn.utils.loading`) calls `explain_load_failure`: every cached
`*.safetensors` of that revision whose content does not hash to its name is removed, so the next attempt downloads
it again. Weights are also checked before a load (`hf_attn.utils.integrity`); this is the repair after one failed.
"""

from __future__ import annotations

import os

from .integrity import blob_matches_its_name, name_unreadable_weights


def evict_corrupt_downloads(repo_id: str, revision: str | None = None, cache_dir: str | None = None) -> list[str]:
    """Removes cached `*.safetensors` files of `repo_id@revision` whose content does not hash to their name.

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
        if name.endswith(".safetensors") and blob_matches_its_name(blob) is False:
            os.remove(path)
            os.remove(blob)
            evicted.append(name)
    return evicted


def explain_load_failure(error: Exception, pretrained_model_name_or_path, kwargs: dict) -> Exception | None:
    """What a failed `from_pretrained` of an hf_attn model should raise instead of `error` (`None`: `error` itself).

    For a Hub model, cached weights whose content does not match their hash are evicted and the error says so, so a
    retry downloads them again instead of trusting a corrupt file. transformers' generic "can't load" `OSError` gets
    the root cause of the failure appended. Called by `SafetensorsLoadingMixin` (`hf_attn.utils.loading`).
    """
    if os.path.isdir(str(pretrained_model_name_or_path)):  # a local folder: name the damaged weight file, if any
        return name_unreadable_weights(os.path.join(str(pretrained_model_name_or_path), kwargs.get("subfolder") or ""))
    evicted = evict_corrupt_downloads(
        str(pretrained_model_name_or_path), kwargs.get("revision"), kwargs.get("cache_dir")
    )
    if evicted:
        return OSError(
            f"The downloaded {', '.join(evicted)} of {pretrained_model_name_or_path} did not match its "
            "hash (corrupted in transit); it was removed from the cache. Retry to download it again."
        )
    # transformers' OSError names the files it looked for; the network's reason is at the chain's end.
    root, depth = error, 0
    while (root.__cause__ or root.__context__) is not None and depth < 20:
        root, depth = root.__cause__ or root.__context__, depth + 1
    if isinstance(error, OSError) and root is not error:
        return OSError(f"{error}\nCaused by {type(root).__name__}: {root}")
    return None

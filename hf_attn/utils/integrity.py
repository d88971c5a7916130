"""Weights are checked before they are used: a flipped byte in a tensor loads without any error otherwise.

Two checks, both before `from_pretrained` reads a tensor (called by the loading mixin, `hf_attn.utils.loading`):

- **Hub downloads.** The cache names every file after its hash: an LFS blob after the sha256 of its content, a
  plain git blob after its git sha1. `verify_hub_weights` downloads the weight files (as `from_pretrained` would),
  hashes them and compares; a mismatch evicts the file and raises an `OSError` naming it, so a retry downloads it
  again.
- **Local files.** `save_pretrained` of every hf_attn model (so `Trainer` checkpoints and `hf-attn train` too)
  records a digest inside each weight file: the safetensors header's metadata holds `hf_attn.sha256`, the sha256
  of the file's tensor table (names, dtypes, shapes, offsets) and tensor bytes, everything but the metadata itself.
  The record travels with the file (copied, uploaded, downloaded), and `from_pretrained` checks every file that
  carries one; `hf-attn verify DIR` does the same on demand. A file written by another tool (a PEFT merge,
  quantisation, transformers' own tests) has no record and loads as transformers loads it.

Cost: one sha256 pass over the weights, about 0.15 s per 100 MB on one core of the CI machine, at save and at load
(`tests/utils/test_integrity.py -s` prints it).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import tempfile
from collections.abc import Iterable
from pathlib import Path

RECORD_KEY = "hf_attn.sha256"  # the safetensors metadata key of the integrity record
WEIGHT_SUFFIXES = (".safetensors", ".safetensors.index.json")


def _hexdigest(path: str | os.PathLike, digest: hashlib._Hash) -> str:
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_of_file(path: str | os.PathLike) -> str:
    """The hex sha256 of a file's content."""
    return _hexdigest(path, hashlib.sha256())


def sha256_of_files(paths: Iterable[str | os.PathLike]) -> list[str]:
    """The hex sha256 of each file's content, in the order given (one call for a folder's files)."""
    return [_hexdigest(path, hashlib.sha256()) for path in paths]


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
# Local files: the record inside the safetensors header
# ---------------------------------------------------------------------------------------------------------------


def weight_files(folder: str | os.PathLike) -> list[Path]:
    """The weight files of a saved model folder (`*.safetensors` and their shard index)."""
    return sorted(path for path in Path(folder).iterdir() if path.name.endswith(WEIGHT_SUFFIXES) and path.is_file())


def _read_header(path: Path) -> tuple[dict, int]:
    """The safetensors header of `path` (its JSON) and the offset where the tensor bytes start. The format: an
    8-byte little-endian header size N, N bytes of JSON, then the tensor bytes."""
    with open(path, "rb") as handle:
        prefix = handle.read(8)
        if len(prefix) != 8:
            raise OSError(f"{path} is not a readable safetensors file (shorter than its 8-byte header size).")
        (size,) = struct.unpack("<Q", prefix)
        if size > os.path.getsize(path) - 8:
            raise OSError(f"{path} is not a readable safetensors file (header size {size} past the end of the file).")
        try:
            header = json.loads(handle.read(size))
        except ValueError as error:
            raise OSError(
                f"{path} is not a readable safetensors file ({error}); it is damaged or truncated."
            ) from None
    if not isinstance(header, dict):
        raise OSError(f"{path} is not a readable safetensors file (its header is not a JSON object).")
    return header, 8 + size


def _tensor_table(header: dict) -> dict:
    """The header without `__metadata__`: every tensor's name, dtype, shape and offsets."""
    return {name: entry for name, entry in header.items() if name != "__metadata__"}


def _table_digest(header: dict) -> hashlib._Hash:
    """A sha256 that has read the tensor table (canonical JSON); the tensor bytes follow."""
    return hashlib.sha256(json.dumps(_tensor_table(header), sort_keys=True, separators=(",", ":")).encode())


def _content_digest(path: Path, header: dict, data_start: int) -> str:
    """sha256 of the tensor table and of the tensor bytes."""
    digest = _table_digest(header)
    with open(path, "rb") as handle:
        handle.seek(data_start)
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def write_record(path: str | os.PathLike) -> str:
    """Adds the integrity record to a safetensors file's metadata (the file is rewritten through a temporary file
    in its folder and renamed over, so a crash leaves the old file whole); returns the digest.

    One pass over the tensor bytes: they are hashed as they are copied, behind a header whose digest is a
    placeholder of the digest's own length, written over once the copy is done."""
    path = Path(path)
    header, data_start = _read_header(path)
    digest = _table_digest(header)
    metadata = {**(header.get("__metadata__") or {}), RECORD_KEY: "0" * digest.digest_size * 2}

    def encode(metadata: dict) -> bytes:
        encoded = json.dumps({"__metadata__": metadata, **_tensor_table(header)}, separators=(",", ":")).encode()
        encoded += b" " * (-len(encoded) % 8)  # the tensor bytes stay 8-byte aligned, as safetensors writes them
        return struct.pack("<Q", len(encoded)) + encoded

    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out, open(path, "rb") as source:
            out.write(encode(metadata))
            source.seek(data_start)
            for chunk in iter(lambda: source.read(1 << 20), b""):
                digest.update(chunk)
                out.write(chunk)
            out.seek(0)
            out.write(encode({**metadata, RECORD_KEY: digest.hexdigest()}))  # the same length as the placeholder
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise
    return digest.hexdigest()


def write_records(folder: str | os.PathLike) -> list[str]:
    """Records every safetensors file of a saved folder (`write_record`); returns the file names recorded."""
    folder = Path(folder)
    names = []
    paths = [path for path in weight_files(folder) if path.name.endswith(".safetensors")]
    for path in paths:  # all checked first: a file that does not load is never recorded as good
        try:
            check_loads(path)
        except OSError as error:
            raise OSError(f"{error}: it was not recorded.") from None
    for path in paths:
        write_record(path)
        names.append(path.name)
    return names


def check_loads(path: str | os.PathLike) -> None:
    """Raises an `OSError` naming `path` unless safetensors opens it: its header parses and its tensors cover the
    file exactly (a file cut short, or not safetensors at all, does not load)."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="pt"):
            pass
    except (SafetensorError, OSError) as error:
        raise OSError(f"{path} does not load ({' '.join(str(error).split())})") from None


def verify_file(path: str | os.PathLike) -> bool:
    """Checks a safetensors file against its own record: `True` when it carries one and matches, `False` when it
    carries none (written by another tool); an `OSError` naming the file when it does not match."""
    path = Path(path)
    header, data_start = _read_header(path)
    expected = (header.get("__metadata__") or {}).get(RECORD_KEY)
    if expected is None:
        return False
    if _content_digest(path, header, data_start) != expected:
        raise OSError(
            f"{path} does not match the sha256 recorded in its header ({RECORD_KEY}): the file is corrupted or was "
            "changed after saving. Restore it, or if you changed it on purpose, record it again "
            f"(`hf-attn verify {path.parent} --update`)."
        )
    return True


def verify_folder(folder: str | os.PathLike, require_record: bool = False) -> list[str]:
    """Checks a saved model folder's weight files against their records (`verify_file`); returns the names
    checked. A file without a record passes unchecked. Raises `OSError` naming the first file that does not match,
    or (with `require_record`) naming the folder when nothing in it could be checked."""
    folder = Path(folder)
    checked = [path.name for path in weight_files(folder) if path.name.endswith(".safetensors") and verify_file(path)]
    if require_record and not checked:
        raise OSError(
            f"{folder}: no weight file carries an integrity record ({RECORD_KEY}): it was not saved by hf_attn, "
            "nothing to verify."
        )
    return sorted(checked)


# ---------------------------------------------------------------------------------------------------------------
# Hub downloads
# ---------------------------------------------------------------------------------------------------------------


class TransferError(OSError):
    """A Hub download that failed in transfer (`hf_attn.utils.hub_faults`), told in one line."""


def verify_hub_weights(repo_id: str, kwargs: dict) -> list[str]:
    """Downloads (or finds in the cache) the weight files of `repo_id` as `from_pretrained(**kwargs)` would, and
    checks each against the hash its cache blob is named after; returns the names checked.

    A mismatch evicts the file from the cache and raises `OSError` naming it, as does a transfer that fails (the
    network, the Hub's answer, the token: `hf_attn.utils.hub_faults`), so that the download is tried in one round.
    What is missing (no such repo or revision, no safetensors) is left to `from_pretrained` to report.
    """
    from huggingface_hub import hf_hub_download

    from .hub_faults import transfer_fault, transfer_file

    options = {
        "revision": kwargs.get("revision"),
        "cache_dir": kwargs.get("cache_dir"),
        "token": kwargs.get("token"),
        "local_files_only": bool(kwargs.get("local_files_only", False)),
        "subfolder": kwargs.get("subfolder") or None,
    }

    def download(name: str) -> str:
        try:
            return hf_hub_download(repo_id, name, **options)
        except Exception as error:  # the network, the Hub's answer or the token: told once, here (one round)
            fault = transfer_fault(error, missing=False)
            if fault is None:
                raise
            raise TransferError(
                f"downloading {transfer_file(error) or name} of {repo_id} failed: {fault}. The cache holds no "
                "copy of it to trust; run again to retry."
            ) from None

    try:
        try:
            paths = [download("model.safetensors")]
        except TransferError:
            raise
        except Exception:  # a sharded checkpoint: the index names the shards
            index = download("model.safetensors.index.json")
            shards = sorted(set(json.loads(Path(index).read_text())["weight_map"].values()))
            paths = [download(shard) for shard in shards]
    except TransferError:
        raise
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
    """What the loading mixin runs before `from_pretrained`: a local folder's files against their records, a Hub
    repo's downloaded weights against their cache names. Raises `OSError` naming the bad file. `None` (weights given
    as a `state_dict`) has nothing to verify."""
    if pretrained_model_name_or_path is None:
        return
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

"""A Hub transfer that failed, told in one line: its cause (the network, the Hub's answer, the token) and its file.

huggingface_hub retries a transfer, then raises a chain: `RuntimeError: Error while uploading 'model.safetensors' to
the Hub.` over `httpx.RemoteProtocolError: Server disconnected without sending a response.`, or transformers' "Can't
load the model ... a file named pytorch_model.bin" over the download's own error. `transfer_fault` reads the chain
for the cause a user can act on; `hub_push` and the weights check before a Hub load (`hf_attn.utils.integrity`)
put it in their one line, with the file and what the Hub or the cache holds now. `quiet_hub_logs` keeps the
library's retry warnings off the terminal (`hf-attn` does, unless `--debug`).
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Iterator

# Exception classes that mean the connection failed (httpx/httpcore, requests/urllib3 and the standard library name
# them so), whatever package defines them.
NETWORK_ERRORS = (
    "ConnectError",
    "ConnectTimeout",
    "ReadError",
    "ReadTimeout",
    "WriteError",
    "WriteTimeout",
    "RemoteProtocolError",
    "ProtocolError",
    "IncompleteRead",
    "ChunkedEncodingError",
    "ConnectionError",
    "ConnectionResetError",
    "ConnectionAbortedError",
    "BrokenPipeError",
    "TimeoutError",
    "PoolTimeout",
    "NetworkError",
    "TransportError",
)


def causes(error: BaseException) -> Iterator[BaseException]:
    """`error`, then what caused it, down the chain (`__cause__`, else `__context__`)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def _said(error: BaseException) -> str:
    return " ".join(str(error).split())[:300].rstrip(".") or type(error).__name__


def transfer_fault(error: BaseException, missing: bool = True) -> str | None:
    """The cause of a failed Hub transfer, as a line says it ("the network: RemoteProtocolError: Server disconnected
    ...", "the Hub answered 500 ...", "the Hub refused the token (401 ...)"), or `None` when `error` is no transfer's
    fault (a file that does not parse, a bug). `missing=False`: a 404 (no such repo, revision or file) is no fault
    either (the caller looks elsewhere, or lets transformers name what is missing)."""
    for cause in causes(error):
        response = getattr(cause, "response", None)
        status = getattr(response, "status_code", None)
        if isinstance(status, int) and status >= 400 and type(cause).__module__.startswith("huggingface_hub"):
            if status == 404 and not missing:
                return None
            message = (response.headers.get("X-Error-Message") if response is not None else None) or _said(cause)
            if status in (401, 403):
                return f"the Hub refused the token ({status}: {message}): check HF_TOKEN or `hf auth login`"
            return f"the Hub answered {status} ({message})"
        if type(cause).__name__ in NETWORK_ERRORS:
            return f"the network: {type(cause).__name__}: {_said(cause)}"
    return None


def transfer_file(error: BaseException) -> str | None:
    """The file a failed transfer was moving: named in huggingface_hub's message ("Error while uploading 'x'") or
    in the request's URL (a download's path; "the commit" for a commit)."""
    for cause in causes(error):
        named = re.search(r"uploading '([^']+)'", str(cause))
        if named:
            return named.group(1)
        try:
            request = getattr(cause, "request", None) or getattr(getattr(cause, "response", None), "request", None)
        except RuntimeError:  # httpx: an exception raised before its request was set
            request = None
        url = str(getattr(request, "url", "") or "").split("?")[0]
        if "/resolve/" in url:
            return url.rsplit("/resolve/", 1)[1].split("/", 1)[-1]
        if "/commit/" in url:
            return "the commit"
    return None


def quiet_hub_logs() -> None:
    """huggingface_hub logs errors only from now on: its retry warnings ("Retrying in 1s", "'...' thrown while
    requesting") stay off the terminal, and the failure, if any, is told once by the caller. Through its
    `HF_HUB_VERBOSITY` when it is not imported yet (its import sets its level from it), else directly."""
    os.environ.setdefault("HF_HUB_VERBOSITY", "error")
    if "huggingface_hub" in sys.modules:
        logging.getLogger("huggingface_hub").setLevel(logging.ERROR)

"""Hub transfers that fail, in one line (hf_attn.utils.hub_faults), against the loopback Hub server
(`tests/hub_server.py`) with faults injected: a connection closed halfway through an upload and through a download,
a 500 on the commit, a body corrupted at the right length, a token the Hub refuses. Each runs the real `hf-attn`
console script: exit 1, one stderr line naming the cause and the file (and, for a push, that nothing was committed),
nothing on stdout, no retry warnings. After each, the Hub's main serves the one complete revision it had, and a
retry succeeds."""

from __future__ import annotations

import os
import subprocess
import urllib.request
from pathlib import Path

import pytest
import torch

from hf_attn.registry.table import ARCHITECTURES
from tests.helpers import console_script, one_line_faults, tiny_config
from tests.hub_server import HubServer

# Each fault waits out huggingface_hub's own retries (1 s, 2 s, 4 s, ... between them): `make test-long`.
pytestmark = pytest.mark.long

TOKEN, REPO = "hf_alice_test_token", "alice/lin-faults"


@pytest.fixture
def hub():
    with HubServer(tokens={TOKEN: "alice"}) as server:
        yield server


@pytest.fixture
def model_dir(tmp_path) -> Path:
    """A saved Lin model with its tokenizer."""
    from hf_attn import LinSelfAttentiveForSequenceClassification
    from hf_attn.tokenization import train_word_level_tokenizer

    torch.manual_seed(0)
    folder = tmp_path / "lin"
    LinSelfAttentiveForSequenceClassification(tiny_config(ARCHITECTURES["lin_self_attentive"])).save_pretrained(folder)
    train_word_level_tokenizer(["the food was good", "the service was bad"]).save_pretrained(folder)
    return folder


def hf_attn(hub: HubServer, home: Path, *argv: str, token: str = TOKEN) -> subprocess.CompletedProcess:
    """`hf-attn ARGV` pointed at the loopback Hub, with its own cache (`home`) and token."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    env.update(HF_ENDPOINT=hub.endpoint, HF_HOME=str(home), HF_HUB_DISABLE_XET="1", HF_HUB_DISABLE_TELEMETRY="1",
               HF_TOKEN=token, TOKENIZERS_PARALLELISM="false")  # fmt: skip
    return subprocess.run([*console_script(), *argv], env=env, capture_output=True, text=True, timeout=300)


def fails_in_one_line(result: subprocess.CompletedProcess, message: str) -> None:
    """Exit 1, one stderr line matching `message`, nothing on stdout (`one_line_faults`)."""
    assert not one_line_faults(result, message), result.stderr[-3000:]


def pushed(hub: HubServer, model_dir: Path, home: Path) -> str:
    """Pushes `model_dir` to `REPO`; returns the commit main points at."""
    result = hf_attn(hub, home, "push", str(model_dir), REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    return hub.state.repos[REPO].branches["main"]


def assert_main_serves(hub: HubServer, sha: str, model_dir: Path) -> None:
    """The Hub's main is commit `sha`, and each of its files downloads whole, byte for byte the folder's."""
    repo = hub.state.repos[REPO]
    assert repo.branches["main"] == sha
    files = repo.resolve("main").files
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= set(files)
    for name in (name for name in files if (model_dir / name).is_file()):  # the Hub adds .gitattributes
        with urllib.request.urlopen(hub.url(REPO, name)) as response:
            assert response.read() == (model_dir / name).read_bytes(), name


def test_a_push_cut_off_halfway_fails_in_one_line_and_commits_nothing(hub, model_dir, tmp_path):
    first = pushed(hub, model_dir, tmp_path / "home")
    (model_dir / "extra.safetensors").write_bytes(os.urandom(50_000))
    hub.state.cut_uploads = True
    result = hf_attn(hub, tmp_path / "home", "push", str(model_dir), REPO)
    fails_in_one_line(
        result,
        rf"^hf-attn push: pushing .*lin to {REPO} failed on extra\.safetensors: the network: RemoteProtocolError: "
        rf"Server disconnected without sending a response\. Nothing was committed: {REPO}@main is unchanged at "
        rf"commit {first[:12]}; push again to retry",
    )
    (model_dir / "extra.safetensors").rename(tmp_path / "extra.safetensors")
    assert_main_serves(hub, first, model_dir)
    (tmp_path / "extra.safetensors").rename(model_dir / "extra.safetensors")
    hub.state.cut_uploads = False
    retried = hf_attn(hub, tmp_path / "home", "push", str(model_dir), REPO)
    assert retried.returncode == 0, retried.stderr[-3000:]
    assert_main_serves(hub, hub.state.repos[REPO].branches["main"], model_dir)
    assert "extra.safetensors" in hub.state.repos[REPO].resolve("main").files


def test_a_commit_the_hub_refuses_says_nothing_was_committed(hub, model_dir, tmp_path):
    first = pushed(hub, model_dir, tmp_path / "home")
    (model_dir / "notes.txt").write_text("a second version")
    hub.state.failing_commits = 100  # every try of this push
    result = hf_attn(hub, tmp_path / "home", "push", str(model_dir), REPO)
    fails_in_one_line(
        result,
        rf"failed on the commit: the Hub answered 500 \(Internal Error.*\)\. Nothing was committed: {REPO}@main is "
        rf"unchanged at commit {first[:12]}",
    )
    assert hub.state.repos[REPO].branches["main"] == first
    hub.state.failing_commits = 0
    assert hf_attn(hub, tmp_path / "home", "push", str(model_dir), REPO).returncode == 0
    assert_main_serves(hub, hub.state.repos[REPO].branches["main"], model_dir)


def test_a_token_the_hub_refuses_is_named(hub, model_dir, tmp_path):
    first = pushed(hub, model_dir, tmp_path / "home")
    (model_dir / "notes.txt").write_text("a second version")
    result = hf_attn(hub, tmp_path / "home", "push", str(model_dir), REPO, token="hf_not_a_token")
    fails_in_one_line(result, r"the Hub refused the token \(401: Invalid credentials.*HF_TOKEN")
    assert hub.state.repos[REPO].branches["main"] == first
    assert hf_attn(hub, tmp_path / "home", "push", str(model_dir), REPO).returncode == 0


def predicts(hub: HubServer, home: Path) -> subprocess.CompletedProcess:
    """`hf-attn predict REPO "the food was good"` with the cache `home`."""
    return hf_attn(hub, home, "predict", REPO, "the food was good")


def assert_heals(hub: HubServer, faults: set[str], first: str, model_dir: Path, home: Path) -> None:
    """Once the `faults` clear, the Hub's main still serves its revision whole, and the same cache retries well."""
    faults.clear()
    assert_main_serves(hub, first, model_dir)
    retried = predicts(hub, home)
    assert retried.returncode == 0 and "->" in retried.stdout, retried.stderr[-3000:]


def _weights_requests(hub: HubServer) -> list[str]:
    return [method for method, path in hub.state.requests if path.endswith("/model.safetensors")]


def test_a_download_cut_off_halfway_is_one_round_and_one_line(hub, model_dir, tmp_path):
    first = pushed(hub, model_dir, tmp_path / "pusher")
    hub.state.truncate_downloads.add("model.safetensors")
    hub.state.requests.clear()
    result = predicts(hub, tmp_path / "home")
    fails_in_one_line(
        result,
        rf"^hf-attn predict: downloading model\.safetensors of {REPO} failed: the network: RemoteProtocolError: "
        r"peer closed connection without sending complete message body .*run again to retry",
    )
    requests = _weights_requests(hub)
    assert requests.count("HEAD") == 1 and requests.count("GET") <= 6, requests  # huggingface_hub's one round
    snapshot = list((tmp_path / "home" / "hub").glob("models--alice--lin-faults/snapshots/*/model.safetensors"))
    assert snapshot == []  # nothing a retry would trust
    assert_heals(hub, hub.state.truncate_downloads, first, model_dir, tmp_path / "home")


def test_a_download_corrupted_at_the_right_length_is_refused_and_evicted(hub, model_dir, tmp_path):
    first = pushed(hub, model_dir, tmp_path / "pusher")
    hub.state.corrupt_downloads.add("model.safetensors")
    result = predicts(hub, tmp_path / "home")
    fails_in_one_line(
        result,
        rf"The cached model\.safetensors of {REPO} .* does not match the hash it is named after.*removed from the "
        r"cache",
    )
    assert_heals(hub, hub.state.corrupt_downloads, first, model_dir, tmp_path / "home")


def test_a_config_download_cut_off_names_the_model_and_the_file(hub, model_dir, tmp_path):
    """The first file a Hub model reads, its config, cut halfway: the line names `MODEL`, the file and the network
    (not "does not read as a model folder")."""
    first = pushed(hub, model_dir, tmp_path / "pusher")
    hub.state.truncate_downloads.add("config.json")
    result = predicts(hub, tmp_path / "home")
    fails_in_one_line(
        result, rf"^hf-attn predict: MODEL {REPO}: downloading config\.json failed: the network: RemoteProtocolError"
    )
    assert_heals(hub, hub.state.truncate_downloads, first, model_dir, tmp_path / "home")

"""Sharing through the Hub API, against the loopback server of `tests/hub_server.py`.

The clients (hf_attn, transformers, huggingface_hub) are the real, unpatched code talking HTTP. `HF_ENDPOINT` is
read when huggingface_hub is imported, so every client runs in a subprocess whose environment points at the
server, with its own `HF_HOME` (a fresh cache) and token.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hf_attn.registry.table import ARCHITECTURES
from tests.helpers import BLOCK_HF_ATTN, REPO_ROOT, make_inputs, tiny_config
from tests.hub_server import ALICE, BOB, HubServer, validate_card_metadata

# Model + tokenizer used by the clients: tiny, seeded, so that two processes build the same one.
COMMON = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    import torch
    ARGS = json.loads(sys.argv[1])
    INPUTS = torch.tensor([[5, 6, 7, 8], [9, 10, 0, 0]])

    def build(seed=0):
        import hf_attn
        from hf_attn.tokenization import train_word_level_tokenizer
        torch.manual_seed(seed)
        config = hf_attn.LinSelfAttentiveConfig(**hf_attn.ARCHITECTURES["lin_self_attentive"].tiny_config)
        model = hf_attn.LinSelfAttentiveForSequenceClassification(config).eval()
        torch.nn.init.normal_(model.lin.attention.context)  # not uniform, so outputs differ between seeds
        tokenizer = train_word_level_tokenizer(["the food was good", "the service was bad"])
        return model, tokenizer

    def report(**values):
        print("RESULT " + json.dumps(values), flush=True)
    """
)


def run_client(hub: HubServer, body: str, home: Path, token: str | None = ALICE, block_hf_attn: bool = False,
               check: bool = True, **args) -> dict:  # fmt: skip
    """Runs `body` in a fresh interpreter pointed at `hub`; returns what it passed to `report(...)`."""
    script = home.parent / f"client_{home.name}_{abs(hash(body)) % 10**8}.py"
    script.write_text((BLOCK_HF_ATTN if block_hf_attn else "") + COMMON + textwrap.dedent(body))
    env = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    env.update(HF_ENDPOINT=hub.endpoint, HF_HOME=str(home), HF_HUB_DISABLE_XET="1", HF_HUB_DISABLE_TELEMETRY="1",
               HF_HUB_DISABLE_PROGRESS_BARS="1", TOKENIZERS_PARALLELISM="false")  # fmt: skip
    if token:
        env["HF_TOKEN"] = token
    result = subprocess.run(
        [sys.executable, str(script), json.dumps(args)],
        cwd=home.parent, env=env, capture_output=True, text=True, timeout=300, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    if check:
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    # The last RESULT line (a prompt without a newline, e.g. transformers' remote-code question, may precede it).
    marker = result.stdout.rfind("RESULT ")
    output = json.loads(result.stdout[marker:].splitlines()[0].removeprefix("RESULT ")) if marker >= 0 else {}
    output["_returncode"], output["_stderr"] = result.returncode, result.stderr
    return output


PUSH = """
    from hf_attn.cards import render_model_card
    model, tokenizer = build(ARGS.get("seed", 0))
    model.push_to_hub(ARGS["repo"], private=ARGS.get("private", False))
    tokenizer.push_to_hub(ARGS["repo"])
    local = Path("local_" + ARGS["repo"].replace("/", "_"))
    model.save_pretrained(local)
    commit = render_model_card(local, repo_id=ARGS["repo"]).push_to_hub(ARGS["repo"])
    report(logits=model(INPUTS).logits.tolist(), ids=tokenizer("the food was good")["input_ids"],
           weights_size=(local / "model.safetensors").stat().st_size)
"""

LOAD = """
    if not ARGS.get("blocked"):
        import hf_attn
    from huggingface_hub import ModelCard
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    kwargs = {k: ARGS[k] for k in ("revision", "trust_remote_code") if k in ARGS}
    model = AutoModelForSequenceClassification.from_pretrained(ARGS["repo"], **kwargs).eval()
    values = {"logits": model(INPUTS).logits.tolist(), "module": type(model).__module__}
    if ARGS.get("tokenizer", True):
        values["ids"] = AutoTokenizer.from_pretrained(ARGS["repo"], **kwargs)("the food was good")["input_ids"]
    if ARGS.get("card", True):
        card = ModelCard.load(ARGS["repo"])
        values["tags"], values["card_text"] = card.data.tags, card.text
    report(**values)
"""


def assert_close(actual, expected, atol=1e-6):
    import torch

    torch.testing.assert_close(torch.tensor(actual), torch.tensor(expected), rtol=0, atol=atol)


def test_push_model_tokenizer_card_then_load_in_a_fresh_cache(hub, tmp_path):
    pushed = run_client(hub, PUSH, tmp_path / "pusher", repo="alice/lin-round-trip")
    loaded = run_client(hub, LOAD, tmp_path / "fresh", token=None, repo="alice/lin-round-trip")
    assert_close(loaded["logits"], pushed["logits"])
    assert loaded["ids"] == pushed["ids"]
    assert loaded["module"].startswith("hf_attn.")  # hf_attn installed: local code, no remote code
    assert {"hf_attn", "lin_self_attentive"} <= set(loaded["tags"])
    assert "## Citation" in loaded["card_text"] and "trust_remote_code=True" in loaded["card_text"]
    # The weights travelled through the LFS batch/upload/verify exchange, as the real Hub requires.
    weights_commits = [c for c in hub.state.commits_received if "model.safetensors" in c[3]]
    assert weights_commits and all("model.safetensors" not in c[2] for c in hub.state.commits_received)
    repo = hub.state.repos["alice/lin-round-trip"]
    stored = repo.resolve("main").files["model.safetensors"]
    assert stored.lfs_oid and ("alice/lin-round-trip", stored.lfs_oid, pushed["weights_size"]) in hub.state.lfs_uploads
    assert repo.resolve("main").files["config.json"].content is not None  # small files go inline


def test_trainer_push_to_hub_lands_a_loadable_model_with_a_card(hub, tmp_path):
    train_and_push = """
        from transformers import Trainer, TrainingArguments
        from hf_attn.data import PaddingCollator
        model, tokenizer = build()
        rows = [{"input_ids": [5 + i, 6, 7][: 1 + i % 3], "labels": i % 3} for i in range(8)]
        args = TrainingArguments(output_dir="trainer_out", push_to_hub=True, hub_model_id=ARGS["repo"], max_steps=2,
                                 per_device_train_batch_size=4, report_to="none", save_strategy="no", use_cpu=True,
                                 disable_tqdm=True)
        trainer = Trainer(model=model, args=args, train_dataset=rows, processing_class=tokenizer,
                          data_collator=PaddingCollator(0))
        trainer.train()
        trainer.push_to_hub()
        model.eval()
        report(logits=model(INPUTS).logits.tolist())
    """
    pushed = run_client(hub, train_and_push, tmp_path / "trainer", repo="alice/lin-trainer")
    loaded = run_client(hub, LOAD, tmp_path / "fresh", repo="alice/lin-trainer")
    assert_close(loaded["logits"], pushed["logits"])
    files = hub.state.repos["alice/lin-trainer"].resolve("main").files
    assert {"README.md", "model.safetensors", "config.json", "tokenizer.json"} <= set(files)
    assert loaded["card_text"].strip()


def test_revision_pinning_returns_the_first_weights(hub, tmp_path):
    first = run_client(hub, PUSH, tmp_path / "v1", repo="alice/lin-pinned", seed=0)
    first_sha = hub.state.repos["alice/lin-pinned"].branches["main"]
    second = run_client(hub, PUSH, tmp_path / "v2", repo="alice/lin-pinned", seed=1)
    assert hub.state.repos["alice/lin-pinned"].branches["main"] != first_sha
    old = run_client(hub, LOAD, tmp_path / "load_old", repo="alice/lin-pinned", revision=first_sha, card=False)
    new = run_client(hub, LOAD, tmp_path / "load_new", repo="alice/lin-pinned", card=False)
    assert_close(old["logits"], first["logits"])
    assert_close(new["logits"], second["logits"])
    with pytest.raises(AssertionError):
        assert_close(first["logits"], second["logits"])


def test_trust_remote_code_from_the_hub_without_hf_attn(hub, tmp_path):
    pushed = run_client(hub, PUSH, tmp_path / "pusher", repo="alice/lin-remote")
    refused = """
        from transformers import AutoModelForSequenceClassification
        try:
            AutoModelForSequenceClassification.from_pretrained(ARGS["repo"])
        except Exception as error:
            report(error=f"{type(error).__name__}: {error}")
    """
    error = run_client(hub, refused, tmp_path / "refused", block_hf_attn=True, repo="alice/lin-remote")["error"]
    assert "trust_remote_code" in error
    loaded = run_client(hub, LOAD, tmp_path / "remote", block_hf_attn=True, repo="alice/lin-remote",
                        trust_remote_code=True, blocked=True)  # fmt: skip
    assert loaded["module"].startswith("transformers_modules")
    assert_close(loaded["logits"], pushed["logits"])


def test_save_pretrained_with_push_to_hub_uploads_the_complete_folder(hub, tmp_path):
    """`save_pretrained(dir, push_to_hub=True)` uploads once the folder's code is written: the pushed model loads
    where hf_attn is blocked."""
    push = """
        model, _ = build()
        model.save_pretrained("local", push_to_hub=True, repo_id=ARGS["repo"])
        report(logits=model(INPUTS).logits.tolist(), code=sorted(p.name for p in Path("local").glob("*.py")))
    """
    pushed = run_client(hub, push, tmp_path / "pusher", repo="alice/lin-save-push")
    assert "utils_loading.py" in pushed["code"] and "layers_validation.py" in pushed["code"]
    loaded = run_client(hub, LOAD, tmp_path / "remote", block_hf_attn=True, repo="alice/lin-save-push",
                        trust_remote_code=True, blocked=True, tokenizer=False, card=False)  # fmt: skip
    assert loaded["module"].startswith("transformers_modules")
    assert_close(loaded["logits"], pushed["logits"])


def test_private_repo_needs_the_owners_token(hub, tmp_path):
    run_client(hub, PUSH, tmp_path / "pusher", repo="alice/lin-private", private=True)
    assert hub.state.repos["alice/lin-private"].private
    probe = """
        import huggingface_hub
        from huggingface_hub.errors import RepositoryNotFoundError
        from transformers import AutoModelForSequenceClassification
        import hf_attn
        outcome = {}
        try:
            huggingface_hub.hf_hub_download(ARGS["repo"], "config.json")
            outcome["hub"] = "ok"
        except RepositoryNotFoundError as error:
            outcome["hub"], outcome["status"] = "RepositoryNotFoundError", error.response.status_code
        try:
            AutoModelForSequenceClassification.from_pretrained(ARGS["repo"])
            outcome["transformers"] = "ok"
        except OSError as error:
            outcome["transformers"] = str(error)
        report(**outcome)
    """
    anonymous = run_client(hub, probe, tmp_path / "anonymous", token=None, repo="alice/lin-private")
    assert anonymous["hub"] == "RepositoryNotFoundError" and anonymous["status"] == 401
    assert "token" in anonymous["transformers"] or "private" in anonymous["transformers"]
    other_user = run_client(hub, probe, tmp_path / "bob", token=BOB, repo="alice/lin-private")
    assert other_user["hub"] == "RepositoryNotFoundError"
    owner = run_client(hub, probe, tmp_path / "alice", token=ALICE, repo="alice/lin-private")
    assert owner == {**owner, "hub": "ok", "transformers": "ok"}


@pytest.mark.long  # the Hub client's retries and timeouts (`make test-long`)
def test_missing_repo_missing_file_and_broken_downloads(hub, tmp_path):
    pushed = run_client(hub, PUSH, tmp_path / "pusher", repo="alice/lin-faults")
    errors = """
        import huggingface_hub
        from huggingface_hub.errors import EntryNotFoundError, RepositoryNotFoundError, RevisionNotFoundError
        import hf_attn
        from transformers import AutoModelForSequenceClassification
        outcome = {}
        for name, call in [
            ("repo", lambda: huggingface_hub.hf_hub_download("alice/no-such-model", "config.json")),
            ("file", lambda: huggingface_hub.hf_hub_download(ARGS["repo"], "no_such_file.json")),
            ("revision", lambda: huggingface_hub.hf_hub_download(ARGS["repo"], "config.json", revision="v9")),
            ("transformers", lambda: AutoModelForSequenceClassification.from_pretrained("alice/no-such-model")),
        ]:
            try:
                call()
                outcome[name] = "ok"
            except Exception as error:
                outcome[name] = type(error).__name__ + ": " + str(error).splitlines()[0]
        report(**outcome)
    """
    outcome = run_client(hub, errors, tmp_path / "errors", repo="alice/lin-faults")
    assert outcome["repo"].startswith("RepositoryNotFoundError")
    assert outcome["file"].startswith("RemoteEntryNotFoundError") or outcome["file"].startswith("EntryNotFoundError")
    assert outcome["revision"].startswith("RevisionNotFoundError")
    assert outcome["transformers"].startswith("OSError") and "alice/no-such-model" in outcome["transformers"]

    load = """
        import hf_attn
        from transformers import AutoModelForSequenceClassification
        try:
            model = AutoModelForSequenceClassification.from_pretrained(ARGS["repo"]).eval()
            report(logits=model(INPUTS).logits.tolist())
        except Exception as error:
            report(error=f"{type(error).__name__}: {error}")
    """
    cache = tmp_path / "cache"
    snapshot_weights = lambda: list((cache / "hub").glob("models--alice--lin-faults/snapshots/*/model.safetensors"))  # noqa: E731
    # A connection cut halfway: a clear error, and nothing in the snapshot that a retry would trust.
    hub.state.truncate_downloads.add("model.safetensors")
    cut = run_client(hub, load, cache, repo="alice/lin-faults")
    assert "error" in cut and "complete message body" in cut["error"], cut
    assert snapshot_weights() == []
    # Bytes corrupted in transit (right size): refused before use with a clear error, and the file leaves the cache.
    hub.state.truncate_downloads.clear()
    hub.state.corrupt_downloads.add("model.safetensors")
    corrupt = run_client(hub, load, cache, repo="alice/lin-faults")
    assert "does not match the hash it is named after" in corrupt.get("error", ""), corrupt
    assert snapshot_weights() == []
    # The network heals: the same cache retries and gets the right weights.
    hub.state.corrupt_downloads.clear()
    healed = run_client(hub, load, cache, repo="alice/lin-faults")
    assert_close(healed["logits"], pushed["logits"])
    # A byte flipped later inside a cached tensor (the file still parses): refused before use, naming the file, and
    # evicted; the next load downloads it again.
    (weights,) = snapshot_weights()
    blob = weights.resolve()
    data = bytearray(blob.read_bytes())
    data[8 + int.from_bytes(data[:8], "little") + 5] ^= 0x40
    blob.write_bytes(bytes(data))
    rotten = run_client(hub, load, cache, repo="alice/lin-faults")
    assert "model.safetensors of alice/lin-faults" in rotten.get("error", ""), rotten
    assert "does not match the hash it is named after" in rotten["error"] and not blob.exists()
    again = run_client(hub, load, cache, repo="alice/lin-faults")
    assert_close(again["logits"], pushed["logits"])


def test_hf_attn_train_reads_a_hub_dataset_with_its_config_splits_and_class_names(hub, tmp_path):
    """`--dataset USER/NAME --dataset_config --eval_split`: a dataset pushed with `DatasetDict.push_to_hub` (parquet
    shards through LFS, a card with its features) trains Lin's model; class names come from its `ClassLabel`."""
    push_and_train = """
        from datasets import ClassLabel, Dataset, DatasetDict, Features, Value
        from hf_attn.cli import main
        from hf_attn.data.examples import review_rows
        names = ["1 star", "2 stars", "3 stars", "4 stars", "5 stars"]
        features = Features({"text": Value("string"), "label": ClassLabel(names=names)})
        rows = [{"text": row["review"], "label": row["stars"] - 1} for row in review_rows(700, seed=0)]
        splits = {"train": rows[:600], "test": rows[600:]}
        DatasetDict({k: Dataset.from_list(v, features=features) for k, v in splits.items()}).push_to_hub(
            ARGS["repo"], config_name="mini"
        )
        main(["train", "--arch", "lin_self_attentive", "--dataset", ARGS["repo"], "--dataset_config", "mini",
              "--train_split", "train", "--eval_split", "test", "--output_dir", "out", "--num_train_epochs", "8",
              "--learning_rate", "2e-2", "--no-progress", "--save_strategy", "no", "--report_to", "none",
              "--config", "embedding_size=16", "hidden_size=16", "attention_hidden_size=16", "attention_hops=2",
              "classifier_hidden_size=16", "hidden_dropout_prob=0", "penalty_coefficient=0"])
        record = json.loads(Path("out/hf_attn_training.json").read_text())
        report(id2label=json.loads(Path("out/config.json").read_text())["id2label"], record=record)
    """
    result = run_client(hub, push_and_train, tmp_path / "trainer", repo="alice/reviews-mini")
    parquet = [p for p in hub.state.repos["datasets/alice/reviews-mini"].resolve("main").files if ".parquet" in p]
    assert len(parquet) == 2 and all(p.startswith("mini/") for p in parquet), parquet
    assert result["id2label"] == {str(i): f"{i + 1} star{'s' * bool(i)}" for i in range(5)}
    record = result["record"]
    assert record["dataset"]["name"] == "alice/reviews-mini (mini)" and record["settings"]["held-out examples"] == 100
    assert record["metrics"]["accuracy"] >= 0.7, record  # 5 classes, one cue word each; measured 1.0
    missing = run_client(hub, "from hf_attn.cli import main\nmain(['train', '--dataset', 'alice/nothing-here'])\n",
                         tmp_path / "missing", check=False)  # fmt: skip
    message = missing["_stderr"].strip().splitlines()[-1]
    print(f"\naccuracy {record['metrics']['accuracy']:.4f}; a missing id: {message}")
    assert missing["_returncode"] != 0 and "alice/nothing-here" in message


@pytest.mark.long  # the manual's commands as written, each a fresh `hf-attn` (`make test-long`)
def test_the_manuals_share_commands_run(hub, tmp_path):
    """The manual's "Share on the Hub" commands, run as written (with the loopback endpoint and a test token)."""
    section = (REPO_ROOT / "docs" / "pages" / "hub.md").read_text().split("\n## ", 1)[0]
    commands = [
        line.strip()
        for block in section.split("```bash")[1:]
        for line in block.split("```", 1)[0].strip().splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    assert any("hf-attn push" in command for command in commands) and any("hf-attn card" in c for c in commands)
    venv_bin = str(Path(sys.executable).parent) + "/"
    runs = [f"subprocess.run({c.replace('.venv/bin/', venv_bin)!r}, shell=True, check=True)" for c in commands]
    script = "\nimport subprocess\nos.environ['HF_USER'] = 'alice'\n" + "\n".join(runs) + "\n"
    body = script + "report(done=True)\n"
    assert run_client(hub, body, tmp_path / "readme")["done"]
    repo = hub.state.repos["alice/lin-demo"]
    assert {"README.md", "hf_attn_training.json", "model.safetensors"} <= set(repo.resolve("main").files)
    assert "experiment" in repo.branches


def test_server_validates_card_metadata():
    assert validate_card_metadata("---\nlicense: apache-2.0\ntags: [a]\n---\n# x") == []
    assert validate_card_metadata("---\nlicense: not-a-license\n---\n")
    bad_index = "---\nmodel-index:\n- name: x\n  results:\n  - task: {}\n    dataset: {name: d}\n---\n"
    assert len(validate_card_metadata(bad_index)) == 2


# The round trip of every architecture: one pushing client and one loading client for all of them (each client
# is a fresh interpreter that imports torch and transformers: ~8 s), every job reporting its own outcome or error.
ROUND_TRIP_PUSH = """
    import traceback
    import hf_attn
    from safetensors.torch import load_file
    from hf_attn.cards import render_model_card
    from hf_attn.models.elmo.tokenization_elmo import build_elmo_tokenizer
    from hf_attn.models.stcka.kinds import train_concept_tokenizer
    from hf_attn.models.stcka.tokenization_stcka import ConceptSource
    from hf_attn.tokenization import train_bpe_tokenizer, train_document_tokenizer, train_word_level_tokenizer
    texts = ["the food was good . the room was clean .", "the service was bad ."]
    results = {}
    for job in ARGS["jobs"]:
        try:
            architecture = hf_attn.ARCHITECTURES[job["arch"]]
            head = next(h for h in architecture.heads if h.model_class.__name__ == job["head"])
            torch.manual_seed(0)
            model = head.model_class(architecture.config_class(**architecture.tiny_config)).eval()
            if hasattr(model, "set_tree"):  # a label tree: not the id-ordered placeholder, so it must travel
                n = model.config.tree_level_sizes
                model.set_tree([[(n[d + 1] - 1 - child) * n[d] // n[d + 1] for child in range(n[d + 1])]
                                for d in range(len(n) - 1)])
            tokenizer = {
                "word_level": lambda: train_word_level_tokenizer(texts),
                "bpe": lambda: train_bpe_tokenizer(texts, vocab_size=60, min_frequency=1),
                "document": lambda: train_document_tokenizer(texts),
                "characters": build_elmo_tokenizer,
                "concepts": lambda: train_concept_tokenizer(  # the knowledge base travels with the tokenizer
                    texts, concept_source=ConceptSource({"food": [("meal", 1.0)], "room": [("place", 0.9)]})),
            }[architecture.tokenizer.name]()
            model.push_to_hub(job["repo"])
            tokenizer.push_to_hub(job["repo"])
            local = Path("local") / job["repo"]
            model.save_pretrained(local)
            render_model_card(local, repo_id=job["repo"]).push_to_hub(job["repo"])
            with torch.no_grad():
                logits = model(**load_file(job["inputs"])).logits
            results[job["repo"]] = dict(logits=logits.tolist(), ids=dict(tokenizer(texts[0])),
                                        tokenizer=type(tokenizer).__name__)
        except Exception:
            results[job["repo"]] = {"error": traceback.format_exc()}
    report(**results)
"""

ROUND_TRIP_LOAD = """
    import traceback
    import hf_attn, transformers
    from huggingface_hub import ModelCard
    from safetensors.torch import load_file
    results = {}
    for job in ARGS["jobs"]:
        try:
            loader = getattr(transformers, job["auto_class"]) if job["auto_class"] else getattr(hf_attn, job["head"])
            model = loader.from_pretrained(job["repo"]).eval()
            tokenizer = transformers.AutoTokenizer.from_pretrained(job["repo"])
            with torch.no_grad():
                logits = model(**load_file(job["inputs"])).logits
            results[job["repo"]] = dict(
                logits=logits.tolist(), ids=dict(tokenizer("the food was good . the room was clean .")),
                tokenizer=type(tokenizer).__name__, model=type(model).__name__,
                tags=ModelCard.load(job["repo"]).data.tags)
        except Exception:
            results[job["repo"]] = {"error": traceback.format_exc()}
    report(**results)
"""


def _round_trip_heads() -> list:
    """Per architecture its first head with an Auto class, and every head without one (pairs, the label tree, the
    few-shot heads: loaded by their hf_attn class) whose inputs and labels no head of the list has yet (the plain
    prototypical network loads exactly as Proto-HATT's head does)."""
    params = []
    for name, architecture in ARCHITECTURES.items():
        first = next((head for head in architecture.heads if head.auto_class is not None), None)
        covered = set()
        for head in architecture.heads:
            kind = (head.inputs, head.labels)
            if head is first or (head.auto_class is None and kind not in covered):
                covered.add(kind)
                suffix = "" if head is first else f"-{head.model_class.__name__}"
                params.append(pytest.param(architecture, head, id=f"{name}{suffix}"))
    return params


def _round_trip_repo(architecture, head) -> str:
    return f"alice/{architecture.name.replace('_', '-')}-{head.model_class.__name__.lower()}"


@pytest.fixture(scope="session")  # session: a module fixture ends whenever the worker runs another module
def round_trips(request, tmp_path_factory):
    """Every selected head of `_round_trip_heads()` pushed (model, tokenizer, card) by one client, then loaded by
    another in a fresh cache without a token: the server and both clients' reports by repo."""
    from safetensors.torch import save_file

    selected = {
        item.callspec.id
        for item in request.session.items
        if item.originalname == "test_every_architecture_round_trips_through_the_hub"
    }
    folder = tmp_path_factory.mktemp("round_trips")
    jobs = []
    for param in (param for param in _round_trip_heads() if param.id in selected):
        architecture, head = param.values
        config = tiny_config(architecture)
        inputs = {name: tensor.contiguous() for name, tensor in make_inputs(head, config, [4, 2, 5]).items()}
        repo = _round_trip_repo(architecture, head)
        save_file(inputs, folder / f"{repo.replace('/', '_')}.safetensors")
        jobs.append({"arch": architecture.name, "head": head.model_class.__name__, "auto_class": head.auto_class,
                     "repo": repo, "inputs": str(folder / f"{repo.replace('/', '_')}.safetensors")})  # fmt: skip
    with HubServer(tokens={ALICE: "alice", BOB: "bob"}) as server:
        pushed = run_client(server, ROUND_TRIP_PUSH, folder / "pusher", jobs=jobs)
        loaded = run_client(server, ROUND_TRIP_LOAD, folder / "fresh", token=None, jobs=jobs)
        yield server, pushed, loaded


@pytest.mark.xdist_group("hub_round_trips")  # one worker runs the two clients for all of them
@pytest.mark.parametrize(("architecture", "head"), _round_trip_heads())
def test_every_architecture_round_trips_through_the_hub(round_trips, architecture, head):
    """Model, tokenizer and card pushed; loaded in a fresh cache by the Auto classes (or, for a head without one,
    its hf_attn class): identical outputs and ids, the same classes, the card's tags, and the weights stored
    through LFS. Registry-driven: new architectures get it too."""
    hub, pushed_all, loaded_all = round_trips
    repo = _round_trip_repo(architecture, head)
    pushed, loaded = pushed_all[repo], loaded_all[repo]
    assert "error" not in pushed, pushed.get("error")
    assert "error" not in loaded, loaded.get("error")
    assert_close(loaded["logits"], pushed["logits"])
    assert loaded["ids"] == pushed["ids"] and loaded["tokenizer"] == pushed["tokenizer"]
    assert loaded["model"] == head.model_class.__name__
    assert {"hf_attn", architecture.name} <= set(loaded["tags"])
    stored = hub.state.repos[repo].resolve("main").files["model.safetensors"]
    assert stored.lfs_oid and stored.content is None


def test_a_trained_models_card_carries_its_attention_picture(hub, tmp_path):
    """`hf-attn train` draws the model's attention for a held-out example into attention.png, the card links it, and
    the push carries it."""
    train_and_push = """
        from hf_attn.hub import push_model_dir
        from hf_attn.commands.train import train
        train("trained", num_train=100, num_eval=20, max_steps=3, disable_tqdm=True, logging_steps=100,
              config_overrides={"hidden_size": 8, "attention_hops": 2, "classifier_hidden_size": 8})
        push_model_dir("trained", ARGS["repo"])
        report(card=open("trained/README.md").read())
    """
    pushed = run_client(hub, train_and_push, tmp_path / "client", repo="alice/lin-picture")
    assert "error" not in pushed, pushed.get("error")
    assert "![attention](attention.png)" in pushed["card"]
    files = hub.state.repos["alice/lin-picture"].resolve("main").files
    assert "attention.png" in files and "README.md" in files

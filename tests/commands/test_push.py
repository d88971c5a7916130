"""`hf-attn push`: a carded folder uploaded to a private repo and to a branch, without the Trainer's checkpoints, and
loaded back from the branch."""

from __future__ import annotations

from tests.test_hub import LOAD, assert_close, run_client


def test_cli_push_with_revision_and_private(hub, tmp_path):
    build_and_push = """
        import subprocess
        model, tokenizer = build()
        model.save_pretrained("cli_model")
        tokenizer.save_pretrained("cli_model")
        model.save_pretrained("cli_model/checkpoint-2")  # Trainer scratch, never uploaded
        model.save_pretrained("cli_model/bilm/checkpoint-2")
        hf_attn_cli = [sys.executable, "-m", "hf_attn.cli"]
        subprocess.run(hf_attn_cli + ["card", "cli_model", "--repo-id", ARGS["repo"]], check=True)
        subprocess.run(hf_attn_cli + ["push", "cli_model", ARGS["repo"], "--private"], check=True)
        subprocess.run(hf_attn_cli + ["push", "cli_model", ARGS["repo"], "--revision", "experiment"], check=True)
        report(logits=model(INPUTS).logits.tolist())
    """
    pushed = run_client(hub, build_and_push, tmp_path / "cli", repo="alice/lin-cli")
    repo = hub.state.repos["alice/lin-cli"]
    assert repo.private and set(repo.branches) == {"main", "experiment"}
    assert "README.md" in repo.resolve("experiment").files
    assert not [name for name in repo.resolve("experiment").files if "checkpoint-" in name]
    loaded = run_client(hub, LOAD, tmp_path / "load", repo="alice/lin-cli", revision="experiment")
    assert_close(loaded["logits"], pushed["logits"])

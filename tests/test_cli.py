"""The `hf-attn` command: list, train, demo."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from hf_attn.cli import main
from hf_attn.registry.table import ARCHITECTURES, get_architecture
from tests.helpers import one_line_faults, run_console_commands


def _files(folder: Path) -> dict[str, Path]:
    """Small input files with one mistake each (and one good CSV)."""
    contents = {
        "ok.csv": b"text,label\nhi there,1\nyo man,0\nfine day,1\n",
        "empty.csv": b"text,label\n",
        "bad.jsonl": b'{"text": "a", "label": 1}\n{"text": "b" "label": 0}\n',
        "latin1.csv": b"text,label\ngood,1\n\xe9t\xe9,0\n",
        "latin1.txt": b"hello there\n\xff bad\n",
        "ragged.tsv": b"text\tlabel\nhi there\t1\nyo\tman\t0\n",
        "array.json": b'[{"text": "a", "label": 1},\n {"text": "b", "label": }]\n',
        "one-label.csv": b"text,label\nhi there,pos\nyo man,pos\nfine day,pos\n",
    }
    for name, content in contents.items():
        (folder / name).write_bytes(content)
    # A saved weights file cut to half its size (a save killed by a full disk, a copy interrupted).
    from safetensors.torch import save_file

    (folder / "local-yelp").mkdir()  # a local copy of a recipe's data without the recipe's held-out split
    (folder / "local-yelp" / "train.csv").write_bytes(contents["ok.csv"])
    (folder / "cut").mkdir()
    weights = folder / "cut" / "model.safetensors"
    save_file({"weight": torch.ones(64, 64)}, str(weights))
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    return {name: folder / name for name in contents}


# Each mistake: the command line (FILES: the folder of `_files`, OUT: a fresh folder), and what its one line says.
MISTAKES = {
    "convert an architecture without a converter": (["convert", "han", "--output", "OUT"], "no converter for 'han'"),
    "convert without a checkpoint": (["convert", "sgm", "--output", "OUT"], "required: --checkpoint"),
    "convert a missing checkpoint": (
        ["convert", "lin_self_attentive", "--checkpoint", "FILES/nope.pt", "--output", "OUT"],
        r"--checkpoint .*nope\.pt: no such file",
    ),
    "unknown architecture": (["train", "--arch", "hann", "--output_dir", "OUT"], "Unknown architecture 'hann'"),
    "missing label column": (
        ["train", "--dataset", "FILES/ok.csv", "--label_column", "stars", "--output_dir", "OUT"],
        "'stars' is not a column",
    ),
    "empty csv": (["train", "--dataset", "FILES/empty.csv", "--output_dir", "OUT"], "empty.csv is empty"),
    "malformed jsonl": (["train", "--dataset", "FILES/bad.jsonl", "--output_dir", "OUT"], r"bad\.jsonl .*row 2"),
    "config value of the wrong type": (
        ["train", "--config", "attention_hops=abc", "--output_dir", "OUT"],
        "--config: .*'attention_hops'",
    ),
    "config field typo": (
        ["train", "--config", "hiden_size=16", "--output_dir", "OUT"],
        "no field 'hiden_size'; did you mean hidden_size",
    ),
    "max_steps 0": (["train", "--max_steps", "0", "--output_dir", "OUT"], "--max_steps 0 would train nothing"),
    "unknown option": (["train", "--epochz", "3", "--output_dir", "OUT"], "unrecognized arguments: --epochz"),
    "missing local dataset": (
        ["train", "--dataset", "my-data/review.csv", "--output_dir", "OUT"],
        "my-data/review.csv: no such file or folder .*local path",
    ),
    "missing local held-out file": (
        ["train", "--dataset", "FILES/ok.csv", "--eval_dataset", "FILES/nope.csv", "--output_dir", "OUT"],
        "--eval-dataset .*nope.csv: no such file",
    ),
    "tsv with a ragged row": (["train", "--dataset", "FILES/ragged.tsv", "--output_dir", "OUT"], "ragged.tsv .*row 3"),
    "json array that does not parse": (
        ["train", "--dataset", "FILES/array.json", "--output_dir", "OUT"],
        "array.json .*line 2",
    ),
    "csv not utf-8": (
        ["train", "--dataset", "FILES/latin1.csv", "--output_dir", "OUT"],
        "latin1.csv .*line 3: not UTF-8",
    ),
    "text not utf-8": (
        ["train", "--arch", "elmo", "--dataset", "FILES/latin1.txt", "--output_dir", "OUT"],
        "latin1.txt .*line 2: not UTF-8",
    ),
    "missing local tokenizer": (
        ["train", "--tokenizer", "FILES/tokenizer", "--output_dir", "OUT"],
        "--tokenizer .*tokenizer: no such file",
    ),
    "predict on a missing folder": (
        ["predict", "FILES/no-model", "hello"],
        "MODEL .*no-model: no such file or folder",
    ),
    "evaluate on a missing folder": (["evaluate", "FILES/no-model", "--dataset", "FILES/ok.csv"], "no such file"),
    "card with an empty user": (["card", "FILES", "--repo-id", "/lin-demo"], "'/lin-demo' is not a Hub repo id"),
    "push to a bad repo id": (["push", "FILES", "a//b"], "'a//b' is not a Hub repo id"),
    "verify a folder without weights": (["verify", "FILES"], "no weight file carries an integrity record"),
    "visualize to an svg": (["visualize", "FILES/no-model", "x", "--out", "OUT.svg"], r"\.html or \.png"),
    "unknown command": (["trian"], "invalid choice: 'trian'"),
    # Numbers that would train nothing or fail deep inside transformers, refused before any work.
    "negative epochs": (
        ["train", "--num_train_epochs", "-1", "--output_dir", "OUT"],
        "--num_train_epochs -1 .*nothing",
    ),
    "zero epochs": (
        ["train", "--num_train_epochs", "0", "--output_dir", "OUT"],
        "--num_train_epochs 0 .*command line",
    ),
    "max_length 0": (["train", "--max_length", "0", "--output_dir", "OUT"], "--max_length 0 .*positive number"),
    "negative max_length": (["train", "--max_length", "-1", "--output_dir", "OUT"], "--max_length -1 "),
    "accumulation 0": (
        ["train", "--gradient_accumulation_steps", "0", "--output_dir", "OUT"],
        "--gradient_accumulation_steps 0 ",
    ),
    "batch size 0": (["train", "--per_device_train_batch_size", "0", "--output_dir", "OUT"], "--per_device_train"),
    "negative learning rate": (["train", "--learning_rate", "-0.01", "--output_dir", "OUT"], "--learning_rate -0.01"),
    "negative seed": (["train", "--seed", "-1", "--output_dir", "OUT"], "--seed -1 .*0 or more"),
    "predict a file name as a text": (["predict", "FILES/no-model", "FILES/ok.csv"], "is a file: pass --file"),
    "predict texts and a file": (
        ["predict", "FILES/no-model", "hello", "--file", "FILES/ok.csv"],
        "either on the command line or with --file",
    ),
    "predict from a missing file": (["predict", "FILES/no-model", "--file", "FILES/nope.txt"], "--file .*no such"),
    "predict nothing": (["predict", "FILES/no-model"], "give the texts to predict"),
    "predict a negative top_k": (["predict", "FILES/no-model", "hi", "--top_k", "-1"], "--top_k -1"),
    "verify --update on a cut file": (["verify", "FILES/cut", "--update"], r"model\.safetensors does not load"),
    "report to an integration not installed": (
        ["train", "--report_to", "wandb", "--output_dir", "OUT"],
        "--report_to wandb: not installed",
    ),
    "visualize an empty text": (["visualize", "FILES/no-model", " ", "--out", "OUT.html"], "the text is empty"),
    "word vectors from a csv": (
        ["train", "--word_vectors", "FILES/ok.csv", "--output_dir", "OUT"],
        "ok.csv holds no word vectors",
    ),
    "a dataset folder without data": (
        ["train", "--dataset", "FILES/cut", "--output_dir", "OUT"],
        "--dataset .*cut is a folder holding model.safetensors, not a dataset",
    ),
    "a recipe for another architecture": (
        ["train", "--recipe", "han-yelp", "--arch", "lin_self_attentive", "--output_dir", "OUT"],
        "--arch lin_self_attentive does not fit --recipe han-yelp, which trains han",
    ),
    "a recipe's held-out split missing from local data": (
        ["train", "--recipe", "han-yelp", "--dataset", "FILES/local-yelp", "--output_dir", "OUT"],
        r"'test' is not a split .*\(--eval_split from recipe 'han-yelp': give your own",
    ),
    "evaluation batch size 0": (["train", "--per_device_eval_batch_size", "0", "--output_dir", "OUT"], "eval_batch"),
    "negative warm-up": (["train", "--warmup_steps", "-5", "--output_dir", "OUT"], "--warmup_steps -5 "),
    "no beams": (["train", "--num_beams", "0", "--output_dir", "OUT"], "--num_beams 0 .*positive number of beams"),
    "an empty vocabulary": (["train", "--max_vocab_size", "0", "--output_dir", "OUT"], "--max_vocab_size 0 "),
    "a negative minimum frequency": (["train", "--min_frequency", "-1", "--output_dir", "OUT"], "--min_frequency -1"),
    "hold out twice the data": (
        ["train", "--dataset", "FILES/ok.csv", "--eval_fraction", "2", "--output_dir", "OUT"],
        "--eval_fraction 2 .*between 0 and 1",
    ),
    "unknown recipe": (["train", "--recipe", "no-such-recipe", "--output_dir", "OUT"], "Unknown recipe 'no-such"),
    "config override without a value": (
        ["train", "--config", "hidden_size", "--output_dir", "OUT"],
        "KEY=VALUE, got 'hidden_size'",
    ),
    "resume from a missing checkpoint": (
        ["train", "--resume_from_checkpoint", "FILES/run/checkpoint-3", "--max_steps", "1", "--output_dir", "OUT"],
        "checkpoint-3",
    ),
    "evaluate without data": (["evaluate", "FILES/no-model"], "needs --dataset"),
    "predict a top_k that is no number": (["predict", "FILES/no-model", "hi", "--top_k", "abc"], "invalid int"),
    "push a folder without a model": (
        ["push", "FILES", "user/model"],
        "MODEL_DIR .*files is a folder holding .*, not a model folder",
    ),
    "visualize unknown heads": (
        ["visualize", "FILES/no-model", "hi", "--out", "OUT.html", "--heads", "x"],
        "--heads must be mean, all or head indices",
    ),
    "one label in the training data": (
        ["train", "--dataset", "FILES/one-label.csv", "--output_dir", "OUT"],
        "every training example has the label 'pos'",
    ),
}


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_every_mistake_is_one_line_naming_the_command(mistake, tmp_path):
    """A user's mistake ends the command with one line, `hf-attn COMMAND: what is wrong`, and a non-zero status;
    `--debug` raises the error itself, with its traceback."""
    argv, message = MISTAKES[mistake]
    files = tmp_path / "files"
    files.mkdir()
    _files(files)
    argv = [argument.replace("FILES", str(files)).replace("OUT", str(tmp_path / "out")) for argument in argv]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    line = str(exit_info.value.code)
    commands = ("train", "predict", "evaluate", "card", "push", "verify", "visualize", "convert")
    command = argv[0] if argv[0] in commands else ""
    prefix = rf"hf-attn {command}( \w+)?:" if command else "hf-attn:"  # `hf-attn convert ARCH: ...` names the ARCH
    assert "\n" not in line and re.match(prefix, line), line
    assert re.search(message, line), line
    assert not (tmp_path / "out").exists()  # refused before anything was written
    if command and "(--debug shows the traceback)" in line:  # an error raised under the command, not a usage error
        with pytest.raises(Exception, match=message.split(": ", 1)[-1].split(" .*")[0]) as raised:
            main([*argv, "--debug"])
        assert not isinstance(raised.value, SystemExit)


def test_list_help_and_version_import_neither_torch_nor_transformers():
    """`hf-attn list` and `hf-attn --help` read the registry from its source files (`hf_attn.registry.index`),
    `--version` the installed metadata: they start at once (`benchmarks/cli_startup.py` times them)."""
    for command in ("list", "--help", "--version"):
        code = (
            f"import sys; sys.argv = ['hf-attn', {command!r}]\n"
            "from hf_attn.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "heavy = sorted({'torch', 'transformers', 'datasets'} & set(sys.modules))\n"
            "assert not heavy, heavy"
        )
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        assert any(word in result.stdout for word in ("lin_self_attentive", "train", "hf-attn 0."))


@pytest.mark.parametrize(
    "command", ["train", "evaluate", "predict", "recipes", "demo", "card", "push", "verify", "visualize"]
)
def test_every_command_answers_help_without_torch(command):
    """`hf-attn COMMAND --help` loads no torch and no transformers model or training code: it answers at once.
    `train --help` lists hf_attn's options and the training options whose defaults hf_attn changes, and points to
    `--help-all` for the rest."""
    code = (
        f"import sys; sys.argv = ['hf-attn', {command!r}, '--help']\n"
        "from hf_attn.cli import main\n"
        "try:\n    main()\nexcept SystemExit as exit:\n    assert exit.code in (0, None), exit.code\n"
        "heavy = {'torch', 'datasets', 'transformers.modeling_utils', 'transformers.training_args'}\n"
        "assert not heavy & set(sys.modules), sorted(heavy & set(sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: hf-attn " + command), result.stdout[:200]
    if command == "train":
        assert "--learning_rate" in result.stdout and "--help-all" in result.stdout
        assert "--gradient_accumulation_steps" not in result.stdout.split("Every other option")[0]


def test_console_script_is_installed():
    result = subprocess.run(
        [sys.executable, "-m", "hf_attn.cli", "--help"], capture_output=True, text=True, check=True
    )
    assert "train" in result.stdout and "demo" in result.stdout


def test_version_prints_the_installed_version(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"hf-attn {version('hf_attn')}"


def test_ctrl_c_ends_a_command_with_one_line_and_status_130(capsys):
    """A `KeyboardInterrupt` anywhere under a command (here: raised by the command itself, as Ctrl-C raises it in
    the training loop) ends it with `hf-attn COMMAND: interrupted` and 130, the shell's status for SIGINT."""
    from hf_attn.utils.errors import run_command

    def interrupted(argv: list[str]) -> None:
        raise KeyboardInterrupt

    with pytest.raises(SystemExit) as exit_info:
        run_command(interrupted, ["train", "--output_dir", "x"])
    assert exit_info.value.code == 130
    assert capsys.readouterr().err.strip().splitlines() == ["hf-attn train: interrupted"]
    with pytest.raises(KeyboardInterrupt):
        run_command(interrupted, ["train", "--debug"])


def _failing_run(
    output_dir: Path, fail_at: int, save_steps: int, error: type[BaseException] = RuntimeError
) -> BaseException:
    """A tiny Lin run whose callback raises `error` at step `fail_at` (a crash, or Ctrl-C, inside the training
    loop); returns what the run raised."""
    from transformers import TrainerCallback

    from hf_attn.commands.train import train

    class Crash(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == fail_at:
                raise error("crash inside the training loop")

    sizes = {key: value for key, value in ARCHITECTURES["lin_self_attentive"].tiny_config.items()
             if key not in ("vocab_size", "num_labels", "pad_token_id")}  # fmt: skip
    with pytest.raises(error) as raised:
        train(output_dir=str(output_dir), arch="lin_self_attentive", num_train=32, num_eval=8, batch_size=8,
              max_steps=6, save_steps=save_steps, config_overrides=sizes, disable_tqdm=True, logging_steps=100,
              report_to="none", callbacks=[Crash()])  # fmt: skip
    return raised.value


def test_a_run_that_fails_leaves_no_empty_folder_but_keeps_its_checkpoints(tmp_path):
    """A run that made its output folder and failed inside `Trainer` removes it when it holds nothing of value;
    one that wrote checkpoints keeps them (`--resume_from_checkpoint true` continues from there)."""
    _failing_run(tmp_path / "nothing", fail_at=1, save_steps=100)
    assert not (tmp_path / "nothing").exists()
    _failing_run(tmp_path / "checkpoints", fail_at=3, save_steps=2)
    assert (tmp_path / "checkpoints" / "checkpoint-2").is_dir()


# Mistakes met at every stage of a run (options, files, data, word vectors), each also run into a folder that holds a
# model: the folder is left as it was.
INTO_A_MODEL_FOLDER = (
    "negative seed", "unknown architecture", "missing label column", "malformed jsonl",
    "one label in the training data", "word vectors from a csv", "report to an integration not installed",
)  # fmt: skip


@pytest.mark.long  # fresh `hf-attn` processes, their time is start-up (`make test-long`)
def test_every_mistake_through_the_real_console_script(tmp_path):
    """Every mistake of `MISTAKES`, each as the real `hf-attn` runs it (`run_console_commands`: a sample in fresh
    processes of the installed script, the rest one after another in one interpreter): exit status 1, exactly one
    line on standard error naming what is wrong, nothing on standard output, no output folder made.
    The mistakes of `INTO_A_MODEL_FOLDER` run a second time into a folder that holds a model (with
    `--overwrite_output_dir`, so that the mistake itself is what stops them): it is left byte for byte as it was."""
    files = tmp_path / "files"
    files.mkdir()
    _files(files)
    earlier = {"model.safetensors": b"weights of an earlier run", "config.json": b'{"model_type": "lin"}'}
    jobs = []
    assert set(INTO_A_MODEL_FOLDER) <= set(MISTAKES)
    for index, (name, (argv, message)) in enumerate(MISTAKES.items()):
        out = tmp_path / f"out-{index}"
        argv = [argument.replace("FILES", str(files)).replace("OUT", str(out)) for argument in argv]
        jobs.append((name, argv, message, out, False))
        if name in INTO_A_MODEL_FOLDER:
            kept = tmp_path / f"kept-{index}"
            kept.mkdir()
            for file_name, content in earlier.items():
                (kept / file_name).write_bytes(content)
            argv = [argument if argument != str(out) else str(kept) for argument in argv]
            jobs.append((name, [*argv, "--overwrite_output_dir"], message, kept, True))

    results = list(zip(jobs, run_console_commands([job[1] for job in jobs]), strict=True))
    failures = []
    for (name, _, message, folder, existed), result in results:
        problems = one_line_faults(result, message)
        if existed:
            now = {path.name: path.read_bytes() for path in folder.iterdir()}
            if now != earlier:
                problems.append(f"the earlier model's folder changed: {sorted(now)}")
        elif folder.exists():
            problems.append("an output folder was left")
        if problems:
            failures.append(f"{name}{' (into a model folder)' if existed else ''}: {'; '.join(problems)}")
    assert not failures, "\n".join(failures)


def test_ctrl_c_during_training_names_the_checkpoint_to_resume_from(tmp_path, capsys):
    """Ctrl-C at step 3 of a run that saves every 2 steps: the interruption names checkpoint-2, and the CLI's one
    line carries it; without a checkpoint, the folder the run made is gone and the line says only "interrupted"."""
    from hf_attn.utils.errors import run_command

    interrupt = _failing_run(tmp_path / "saved", fail_at=3, save_steps=2, error=KeyboardInterrupt)
    assert "checkpoint-2" in str(interrupt) and "--resume_from_checkpoint true" in str(interrupt)

    def interrupted(argv: list[str]) -> None:
        raise interrupt

    with pytest.raises(SystemExit) as exit_info:
        run_command(interrupted, ["train"])
    assert exit_info.value.code == 130
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hf-attn train: interrupted; the last complete checkpoint is")
    interrupt = _failing_run(tmp_path / "unsaved", fail_at=1, save_steps=100, error=KeyboardInterrupt)
    assert not (tmp_path / "unsaved").exists() and "checkpoint" not in str(interrupt)


@pytest.mark.parametrize(
    ("raised", "message"),
    [
        (lambda: torch.empty(2**40), "out of memory .*--per_device_train_batch_size"),  # 4 TiB: refused at once
        (lambda: __import__("safetensors.torch").torch.load(b"not safetensors"), "a weights file does not load"),
        (lambda: __import__("yaml").safe_load("sizes: [1, 2"), r"yaml: ParserError: .*expected ',' or ']'"),
    ],
    ids=["memory", "safetensors", "third-party"],
)
def test_errors_a_user_causes_below_the_command_are_one_line(raised, message):
    """Memory exhausted by the sizes asked for, and safetensors' own error for a file that does not parse (raised
    here by the real calls): one line naming what to do, as every other mistake; a bug of ours keeps its
    traceback."""
    from hf_attn.utils.errors import run_command

    with pytest.raises(SystemExit) as exit_info:
        run_command(lambda argv: raised(), ["train"])
    line = str(exit_info.value.code)
    assert "\n" not in line and line.startswith("hf-attn train: ") and re.search(message, line), line
    with pytest.raises(ZeroDivisionError):
        run_command(lambda argv: 1 / 0, ["train"])


def test_a_folder_whose_config_sizes_were_edited_is_one_line(tmp_path):
    """transformers refuses weights that do not fit the config's sizes with a RuntimeError: the user edited
    config.json, and the line says so."""
    import json

    from transformers import AutoModelForSequenceClassification

    from hf_attn.utils.errors import run_command

    row = get_architecture("lin_self_attentive")
    row.heads[0].model_class(row.config_class(**row.tiny_config)).save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    config["hidden_size"] *= 2
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(SystemExit) as exit_info:
        run_command(lambda argv: AutoModelForSequenceClassification.from_pretrained(tmp_path), ["predict"])
    assert str(exit_info.value.code).startswith("hf-attn predict: the weights do not fit the sizes of the config")

"""Converts a bilm-tf ELMo (`options.json` + `weights.hdf5`) to an hf_attn `ElmoModel`.

Original code: https://github.com/allenai/bilm-tf (TensorFlow 1; the weights every released ELMo ships with, also
read by AllenNLP). The hdf5 dump (`bilm.model.dump_weights`) holds, with TF's (in, out) kernels:

| dataset | shape | becomes |
|---|---|---|
| `char_embed` | (261, E) | `character_encoder.character_embeddings.weight` (262, E): a zero row 0 is prepended |
| `CNN/W_cnn_{i}`, `CNN/b_cnn_{i}` | (1, width, E, n), (n,) | `convolutions.{i}` Conv1d weight (n, E, width) |
| `CNN_high_{k}/W_transform`, `b_transform` | (F, F), (F,) | `highways.{k}.transform` (transposed) |
| `CNN_high_{k}/W_carry`, `b_carry` | (F, F), (F,) | `highways.{k}.gate` (transposed; gates the transform) |
| `CNN_proj/W_proj`, `b_proj` | (F, P), (P,) | `character_encoder.projection` (transposed; absent when F = P) |
| `RNN_{d}/RNN/MultiRNNCell/Cell{l}/LSTMCell/W_0` | (D + P, 4H) | `bilm.layers.{l}.weight_ih[d]`, `weight_hh[d]` |
| `…/LSTMCell/B` | (4H,) | `bilm.layers.{l}.bias[d]`, with TF's forget bias +1 added |
| `…/LSTMCell/W_P_0` | (H, P) | `bilm.layers.{l}.weight_proj[d]` (transposed; absent when P = H) |

`d` = 0 forward, 1 backward. TF's `LSTMCell` multiplies `concat([x_t, m_{t−1}])` by W_0: its first D rows act on
the input, the last P on the recurrent state. Its gate columns are (i, j, f, o) with j the candidate; hf_attn keeps
PyTorch's (i, f, g, o). TF adds `forget_bias=1.0` to f at run time; the converted bias includes it.

Writes config + `model.safetensors` + the character tokenizer (with `--vocab`, bilm-tf's `vocab.txt` becomes its
word vocabulary) + `conversion.json` (file hashes, max differences) + a model card.

Usage:
    hf-attn convert elmo --options options.json --weights weights.hdf5 --output DIR \
        [--vocab vocab.txt] [--fixture ../shared/fixtures/elmo]

`--fixture` checks the converted model against the original's outputs in the fixture folder (see its README):
context-free token embeddings of `vocab_test.txt`, the top layer of batch 0 (stateless) and of all 10 batches fed
in order (stateful), with numpy.allclose(atol=1e-6, rtol=1e-5).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from hf_attn.conversion import (
    EXAMPLE_HELP,
    add_output_arguments,
    check_output,
    converter_parser,
    finish_conversion,
    sha256_of,
)
from hf_attn.models.elmo.configuration_elmo import ElmoConfig
from hf_attn.models.elmo.modeling_elmo import ElmoModel
from hf_attn.models.elmo.tokenization_elmo import build_elmo_tokenizer, read_bilm_tf_vocabulary
from hf_attn.utils.inputs import Stage, check_input, is_file_of, read_input

ORIGINAL_CODE = "https://github.com/allenai/bilm-tf"


def _require_h5py():
    try:
        import h5py
    except ImportError as error:  # pragma: no cover - h5py is in the `conversion` and `dev` extras
        raise ImportError("Reading bilm-tf weights needs h5py: pip install 'hf_attn[conversion]'.") from error
    return h5py


def read_weights(path: str | Path) -> dict[str, torch.Tensor]:
    """Every dataset of the hdf5 dump as a float32 tensor, by its path (`CNN/W_cnn_0`, ...)."""
    h5py = _require_h5py()
    tensors: dict[str, torch.Tensor] = {}
    with h5py.File(path, "r") as handle:

        def visit(name: str, item) -> None:
            if isinstance(item, h5py.Dataset):
                tensors[name] = torch.from_numpy(item[...]).to(torch.float32)

        handle.visititems(visit)
    return tensors


def _tf_gates_to_torch(tensor: torch.Tensor, hidden: int) -> torch.Tensor:
    """Reorders TF's gate blocks (i, j, f, o) along axis 0 to PyTorch's (i, f, g=j, o)."""
    i, j, f, o = tensor.split(hidden, dim=0)
    return torch.cat([i, f, j, o], dim=0)


def convert_weights(weights: dict[str, torch.Tensor], config: ElmoConfig) -> dict[str, torch.Tensor]:
    """The hdf5 datasets -> hf_attn's `ElmoModel` state dict. Raises `ValueError` naming a missing dataset, one of
    the wrong shape, or one that the table does not know."""
    used: set[str] = set()

    def take(name: str, shape: tuple[int, ...]) -> torch.Tensor:
        if name not in weights:
            raise ValueError(f"weights file has no dataset `{name}` (needed for options {shape}).")
        tensor = weights[name]
        if tuple(tensor.shape) != shape:
            raise ValueError(f"weights file: `{name}` has shape {tuple(tensor.shape)}, options.json implies {shape}.")
        used.add(name)
        return tensor

    embed, filters_total, projection = config.character_embedding_size, config.num_filters, config.projection_dim
    hidden, output = config.hidden_size, min(config.projection_dim, config.hidden_size)
    state: dict[str, torch.Tensor] = {}
    prefix = "character_encoder."
    char_embed = take("char_embed", (config.n_characters - 1, embed))
    state[prefix + "character_embeddings.weight"] = torch.cat([char_embed.new_zeros(1, embed), char_embed])  # id 0
    for i, (width, number) in enumerate(config.filters):
        kernel = take(f"CNN/W_cnn_{i}", (1, width, embed, number))
        state[prefix + f"convolutions.{i}.weight"] = kernel[0].permute(2, 1, 0).contiguous()  # (n, E, width)
        state[prefix + f"convolutions.{i}.bias"] = take(f"CNN/b_cnn_{i}", (number,))
    for k in range(config.num_highway_layers):
        for ours, theirs in (("transform", "transform"), ("gate", "carry")):
            state[prefix + f"highways.{k}.{ours}.weight"] = take(
                f"CNN_high_{k}/W_{theirs}", (filters_total, filters_total)
            ).t()
            state[prefix + f"highways.{k}.{ours}.bias"] = take(f"CNN_high_{k}/b_{theirs}", (filters_total,))
    if filters_total != projection:
        state[prefix + "projection.weight"] = take("CNN_proj/W_proj", (filters_total, projection)).t()
        state[prefix + "projection.bias"] = take("CNN_proj/b_proj", (projection,))
    for layer in range(config.num_hidden_layers):
        inputs = projection if layer == 0 else output
        parts: dict[str, list[torch.Tensor]] = {"weight_ih": [], "weight_hh": [], "bias": [], "weight_proj": []}
        for direction in (0, 1):
            cell = f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell/"
            kernel = _tf_gates_to_torch(take(cell + "W_0", (inputs + output, 4 * hidden)).t(), hidden)  # (4H, D+P)
            parts["weight_ih"].append(kernel[:, :inputs])
            parts["weight_hh"].append(kernel[:, inputs:])
            bias = _tf_gates_to_torch(take(cell + "B", (4 * hidden,)), hidden).clone()
            bias[hidden : 2 * hidden] += 1.0  # TF LSTMCell's forget_bias, added at run time there
            parts["bias"].append(bias)
            if output < hidden:
                parts["weight_proj"].append(take(cell + "W_P_0", (hidden, output)).t())
        for name, tensors in parts.items():
            if tensors:
                state[f"bilm.layers.{layer}.{name}"] = torch.stack(tensors).contiguous()
    unknown = sorted(set(weights) - used)
    if unknown:
        raise ValueError(f"weights file has datasets that options.json does not describe: {unknown}.")
    return state


# The two files bilm-tf's `dump_weights` leaves, checked before they are read.
OPTIONS = Stage("bilm-tf's options (a JSON file)", is_file_of("json", "text"), hub=False)
WEIGHTS = Stage("bilm-tf's weights (an HDF5 file dump_weights wrote)", is_file_of("hdf5"), hub=False)


def convert(
    options_path: str | Path, weights_path: str | Path, output_dir: str | Path, vocab_path: str | Path | None = None
):
    """Converts and saves model + tokenizer to `output_dir`; returns `(model, tokenizer)`. Each input is read as a
    stage of the command (`hf_attn.utils.inputs`): a file of another kind is named as what it is."""
    check_input("--options", options_path, OPTIONS)
    config = ElmoConfig.from_bilm_tf_options(options_path)
    weights = read_input("--weights", weights_path, WEIGHTS, lambda: read_weights(weights_path))
    model = ElmoModel(config)
    model.load_state_dict(convert_weights(weights, config), strict=True)
    model.eval()
    vocabulary = read_bilm_tf_vocabulary(vocab_path) if vocab_path else None
    tokenizer = build_elmo_tokenizer(vocabulary, max_characters_per_token=config.max_characters_per_token)
    output_dir = Path(output_dir)
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    return model, tokenizer


def _read_dataset(path: Path, name: str) -> torch.Tensor:
    h5py = _require_h5py()
    with h5py.File(path, "r") as handle:
        return torch.from_numpy(handle[name][...])


def _allclose_diff(actual: torch.Tensor, expected: torch.Tensor, name: str, atol: float, rtol: float) -> float:
    """Max |actual − expected|; raises `AssertionError` unless numpy.allclose(actual, expected, atol, rtol)."""
    if actual.shape != expected.shape:
        raise AssertionError(f"{name}: shape {tuple(actual.shape)} != expected {tuple(expected.shape)}")
    difference = (actual.double() - expected.double()).abs()
    if not bool((difference <= atol + rtol * expected.double().abs()).all()):
        raise AssertionError(f"{name}: max |diff| {difference.max().item():.3e} beyond atol={atol}, rtol={rtol}")
    return difference.max().item()


@torch.no_grad()
def check_fixture(model: ElmoModel, tokenizer, fixture_dir: str | Path, atol: float = 1e-6, rtol: float = 1e-5):
    """Compares with the original's outputs in `fixture_dir`; returns the max |diff| per check."""
    fixture_dir = Path(fixture_dir)
    diffs: dict[str, float] = {}
    # 1. Context-free token embeddings x_k of every vocabulary entry, each as a one-token sentence (position 1).
    vocabulary = read_bilm_tf_vocabulary(fixture_dir / "vocab_test.txt")
    batch = tokenizer([[word] for word in vocabulary], is_split_into_words=True, return_tensors="pt")
    stateful = model.stateful
    model.stateful = False
    embeddings = model(**batch).token_embeddings[:, 1]
    expected = _read_dataset(fixture_dir / "elmo_token_embeddings.hdf5", "embedding")
    diffs["token_embeddings"] = _allclose_diff(embeddings, expected, "token_embeddings", atol, rtol)
    # 2. Top layer, batches of sentence i of lists 0, 1, 2; stateless (batch 0 only) then stateful (all, in order).
    lists = json.loads((fixture_dir / "sentences.json").read_text())
    expected_top = [
        [_read_dataset(fixture_dir / f"lm_embeddings_{k}.hdf5", str(i)) for i in range(len(lists[k]))]
        for k in range(len(lists))
    ]
    for mode in ("stateless", "stateful"):
        model.stateful = mode == "stateful"
        model.reset_states()
        worst = 0.0
        for i in range(len(lists[0]) if mode == "stateful" else 1):
            batch = tokenizer([sentences[i] for sentences in lists], return_tensors="pt")
            top = model(**batch).last_hidden_state
            for k in range(len(lists)):
                n = len(lists[k][i].split())
                reference = torch.cat([expected_top[k][i][0], expected_top[k][i][1]], dim=-1)  # (n, 2P)
                worst = max(
                    worst, _allclose_diff(top[k, 1 : n + 1], reference, f"{mode} batch {i} row {k}", atol, rtol)
                )
        diffs[f"top_layer_{mode}" + ("_batch0" if mode == "stateless" else "_10_batches")] = worst
    model.stateful = stateful
    model.reset_states()
    return diffs


def main(argv: list[str] | None = None, prog: str | None = None) -> None:
    parser = converter_parser(__doc__, prog)
    parser.add_argument("--options", required=True, help="bilm-tf options.json")
    parser.add_argument("--weights", required=True, help="bilm-tf weights (hdf5 dump)")
    add_output_arguments(parser, "folder for the converted model and tokenizer")
    parser.add_argument("--vocab", help="bilm-tf vocab.txt: the tokenizer's word vocabulary (for LM fine-tuning)")
    parser.add_argument("--fixture", help="folder with the original's outputs (see ../shared/fixtures/elmo)")
    parser.add_argument("--atol", type=float, default=1e-6)
    parser.add_argument("--rtol", type=float, default=1e-5)
    parser.add_argument("--example", help=EXAMPLE_HELP)
    args = parser.parse_args(argv)
    check_output(args)

    model, tokenizer = convert(args.options, args.weights, args.output, args.vocab)
    files = {"options": args.options, "weights": args.weights} | ({"vocab": args.vocab} if args.vocab else {})
    report = {
        "original_code": ORIGINAL_CODE,
        "script": f"conversion/{Path(__file__).name}",
        "checkpoint": " + ".join(Path(path).name for path in files.values()),
        "sha256": ", ".join(f"{Path(path).name}: {sha256_of(path)}" for path in files.values()),
        "files": {Path(path).name: sha256_of(path) for path in files.values()},
        "output": str(args.output),
    }
    if args.fixture:
        report["max_abs_diff"] = check_fixture(model, tokenizer, args.fixture, args.atol, args.rtol)
        report["tolerance"] = {"atol": args.atol, "rtol": args.rtol}
    finish_conversion(args.output, report, example=args.example)


if __name__ == "__main__":
    main()

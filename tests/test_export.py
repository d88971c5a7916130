"""Every classification and tagging head exports: `torch.export` with a dynamic batch and length, and
`torch.onnx.export(dynamo=True)`, whose graph onnxruntime runs with the logits PyTorch gives (within 1e-5) on
inputs of another batch size and length than the ones traced. Input checks leave no data-dependent branch or host
sync in the graph; the recurrent encoders run as one `scan` there (`hf_attn.layers.rnn.masked_rnn`)."""

from __future__ import annotations

import pytest
import torch

from tests.helpers import all_heads, make_inputs, tiny_config

onnxruntime = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")


# One head (a packed recurrent encoder, the scan most heads export through) runs by default; every head, documents
# and BiBloSA's blocks among them, exports in `make test-slow` (15–40 s each on 2 cores).
DEFAULT_RUN = {"LinSelfAttentiveForSequenceClassification"}


def exported_heads():
    heads = []
    for param in all_heads():
        architecture, head = param.values
        if str(head.labels) in ("token_vocab", "label_sequence"):  # language models and generators: not exported
            continue
        marks = () if head.model_class.__name__ in DEFAULT_RUN else (pytest.mark.slow,)
        heads.append(pytest.param(architecture, head, id=param.id, marks=marks))
    return heads


class Positional(torch.nn.Module):
    """The head with its inputs as positional arguments (what `torch.export` and ONNX name) and its logits out."""

    def __init__(self, model: torch.nn.Module, names: list[str]) -> None:
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.model(**dict(zip(self.names, inputs, strict=True)), return_dict=True).logits


def dynamic_shapes(head, inputs: dict[str, torch.Tensor]) -> tuple:
    """Axis 0 (batch) of every input dynamic, and the length axes of every id or mask: the tokens (the last axis;
    the second of a tensor of each token's characters), a document's sentences too. Everything else (ways, shots,
    characters per token, entity pairs) stays as the model fixes it."""
    shapes = []
    for name, value in inputs.items():
        axes = {0: torch.export.Dim.DYNAMIC}
        if "input_ids" in name or "attention_mask" in name:
            if head.inputs.name == "characters" or "char_" in name:  # (B, T, characters): the tokens are axis 1
                lengths = [1]
            elif head.inputs.name in ("document", "document_pair"):
                lengths = [1, 2]
            else:
                lengths = [value.dim() - 1]
            axes.update(dict.fromkeys(lengths, torch.export.Dim.DYNAMIC))
        shapes.append(axes)
    return (tuple(shapes),)


@pytest.mark.parametrize(("architecture", "head"), exported_heads())
def test_export_and_onnx_match_eager(architecture, head, tmp_path):
    torch.manual_seed(0)
    config = tiny_config(architecture)
    model = head.model_class(config).eval()
    traced_inputs = make_inputs(head, config, [5, 3, 7])
    # Another batch size and another length than the ones traced.
    other = make_inputs(head, config, [4, 9, 2, 6, 1], seed=1)
    wrapper = Positional(model, list(traced_inputs))
    with torch.no_grad():
        program = torch.export.export(
            wrapper, tuple(traced_inputs.values()), dynamic_shapes=dynamic_shapes(head, traced_inputs)
        )
        expected = wrapper(*other.values())
        torch.testing.assert_close(program.module()(*other.values()), expected, rtol=1e-5, atol=1e-5)

        onnx_program = torch.onnx.export(
            wrapper, tuple(traced_inputs.values()), dynamic_shapes=dynamic_shapes(head, traced_inputs),
            dynamo=True, verbose=False,
        )  # fmt: skip
    path = tmp_path / "model.onnx"
    onnx_program.save(str(path))
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = {
        graph_input.name: value.numpy()
        for graph_input, value in zip(session.get_inputs(), other.values(), strict=True)
    }
    (logits,) = session.run(None, feeds)
    torch.testing.assert_close(torch.from_numpy(logits), expected, rtol=1e-5, atol=1e-5)

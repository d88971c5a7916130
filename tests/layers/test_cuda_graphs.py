"""Step loops replayed as CUDA graphs (`hf_attn.layers.cuda_graphs.GraphedLoop`): off CUDA the plain call, and the
capture policy (`make test-gpu` runs the real capture, tests/test_gpu.py)."""

from __future__ import annotations

import torch


def test_graphed_loop_runs_eagerly_off_cuda():
    """On the CPU `GraphedLoop` is the plain call (nothing to capture), with the same results."""
    from hf_attn.layers.cuda_graphs import GraphedLoop

    loop = GraphedLoop(lambda values, scale: [values * scale, None])
    values = torch.randn(3)
    assert not loop.capturable((values, 2.0))
    result = loop(values, 2.0)
    torch.testing.assert_close(result[0], values * 2.0)
    assert result[1] is None and not loop.graphs


def test_graphed_loop_captures_a_signature_on_its_second_call_and_never_evicts(monkeypatch):
    """The capture policy, with the capture itself stood in for (it needs CUDA; tests/test_gpu.py runs the real
    one): a signature runs eagerly once, is captured on its second call and replayed after; past `max_graphs`
    captured signatures, new ones run eagerly instead of evicting."""
    from hf_attn.layers import cuda_graphs

    events = []

    class Recorded:
        def __init__(self, function, arguments):
            events.append(("capture", arguments[0].shape))
            self.function = function

        def replay(self, arguments):
            events.append(("replay", arguments[0].shape))
            return self.function(*arguments)

    monkeypatch.setattr(cuda_graphs, "_Captured", Recorded)
    monkeypatch.setattr(cuda_graphs.GraphedLoop, "capturable", lambda self, arguments: True)
    loop = cuda_graphs.GraphedLoop(lambda values: values * 2, max_graphs=1)
    small, large = torch.ones(2), torch.ones(3)
    for values in (small, small, small, large, large, large):
        torch.testing.assert_close(loop(values), values * 2)
    size = torch.Size
    assert events == [("capture", size([2])), ("replay", size([2])), ("replay", size([2]))]
    assert len(loop.graphs) == 1

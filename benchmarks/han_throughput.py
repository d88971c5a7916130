"""HAN throughput: hf_attn's batched implementation against a per-document loop with identical math.

The loop is what HAN re-implementations commonly do: for each document, for each sentence, run the word GRU on
that sentence alone, attend, then run the sentence GRU over the document's sentence vectors and attend. Same
weights, same equations; its outputs are checked equal to the batched model's before anything is timed.

Measures, at the paper's sizes (embedding 200, GRUs 50 per direction, attention 100) on batches of 32 documents of
1–15 sentences × 1–30 words (varied lengths):
  documents/s for training (forward + backward) and inference, batched vs loop, and how the batched model's time
  grows with sentences × words.
Prints a table; the last line is `RESULT train_ratio=<x> inference_ratio=<y>` (batched / loop throughput).

    .venv/bin/python benchmarks/han_throughput.py [--batch 32] [--repeats 3] [--device cpu]
"""

from __future__ import annotations

import argparse

import torch
from timing import device_name, time_call  # benchmarks/timing.py, beside this script

from hf_attn import HanConfig, HanForDocumentClassification


def per_document_logits(model: HanForDocumentClassification, input_ids: torch.Tensor, mask: torch.Tensor):
    """HAN one document and one sentence at a time (eq. 2–11), with `model`'s weights. Returns `(logits (B, L),
    word_attentions (B, S, T), sentence_attentions (B, S))`, zero-padded like the batched model's."""
    han = model.han
    batch, sentences, words = input_ids.shape
    logits, word_maps, sentence_maps = [], [], []
    for b in range(batch):
        sentence_vectors, word_rows = [], []
        for s in range(sentences):
            length = int(mask[b, s].sum())
            if length == 0:
                continue
            embedded = han.embeddings(input_ids[b, s, :length])[None]  # (1, t, E)
            states = han.word_encoder.rnn(embedded)[0][0]  # h_it (eq. 2–4), (t, 2Hw)
            keys = torch.tanh(han.word_attention.projection(states))  # u_it (eq. 5)
            weights = torch.softmax(keys @ han.word_attention.context[0], dim=0)  # α_it (eq. 6)
            sentence_vectors.append(weights @ states)  # s_i (eq. 7)
            word_rows.append((s, weights))
        word_map = input_ids.new_zeros(sentences, words, dtype=torch.float)
        sentence_map = input_ids.new_zeros(sentences, dtype=torch.float)
        if sentence_vectors:
            states = han.sentence_encoder.rnn(torch.stack(sentence_vectors)[None])[0][0]  # h_i (eq. 8)
            keys = torch.tanh(han.sentence_attention.projection(states))  # u_i (eq. 8)
            weights = torch.softmax(keys @ han.sentence_attention.context[0], dim=0)  # α_i (eq. 9)
            document = weights @ states  # v (eq. 10)
            for (s, word_weights), sentence_weight in zip(word_rows, weights, strict=True):
                word_map[s, : word_weights.numel()] = word_weights
                sentence_map[s] = sentence_weight
        else:
            document = input_ids.new_zeros(han.sentence_encoder.output_size, dtype=torch.float)
        logits.append(model.classifier(document))  # eq. 11 before the softmax
        word_maps.append(word_map)
        sentence_maps.append(sentence_map)
    return torch.stack(logits), torch.stack(word_maps), torch.stack(sentence_maps)


def random_documents(batch: int, max_sentences: int, max_words: int, vocab_size: int, seed: int = 0):
    """Documents of 1..max_sentences sentences of 1..max_words words, right-padded to `(B, S, T)`."""
    generator = torch.Generator().manual_seed(seed)
    sentence_counts = torch.randint(1, max_sentences + 1, (batch,), generator=generator)
    lengths = torch.randint(1, max_words + 1, (batch, max_sentences), generator=generator)
    lengths = lengths * (torch.arange(max_sentences)[None, :] < sentence_counts[:, None])
    mask = (torch.arange(max_words)[None, None, :] < lengths[..., None]).long()
    input_ids = torch.randint(1, vocab_size, (batch, max_sentences, max_words), generator=generator) * mask
    return input_ids, mask


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--max-sentences", type=int, default=15)
    parser.add_argument("--max-words", type=int, default=30)
    parser.add_argument("--vocab", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    device = torch.device(args.device)

    torch.manual_seed(0)
    model = HanForDocumentClassification(HanConfig(vocab_size=args.vocab, num_labels=5)).to(device)  # paper sizes
    documents = random_documents(args.batch, args.max_sentences, args.max_words, args.vocab)
    input_ids, mask = (tensor.to(device) for tensor in documents)
    labels = torch.randint(0, 5, (args.batch,)).to(device)

    model.eval()
    with torch.no_grad():
        batched = model(input_ids, mask)
        loop_logits, loop_words, loop_sentences = per_document_logits(model, input_ids, mask)
    differences = {
        "logits": (batched.logits - loop_logits).abs().max().item(),
        "word_attentions": (batched.word_attentions - loop_words).abs().max().item(),
        "sentence_attentions": (batched.sentence_attentions - loop_sentences).abs().max().item(),
    }
    assert max(differences.values()) < 1e-5, f"batched and loop outputs differ: {differences}"

    def train_batched():
        model.zero_grad(set_to_none=True)
        model(input_ids, mask, labels=labels).loss.backward()

    def train_loop():
        model.zero_grad(set_to_none=True)
        logits = per_document_logits(model, input_ids, mask)[0]
        torch.nn.functional.cross_entropy(logits, labels).backward()

    def infer_batched():
        with torch.no_grad():
            model(input_ids, mask)

    def infer_loop():
        with torch.no_grad():
            per_document_logits(model, input_ids, mask)

    model.train()  # no dropout at the paper's setting: training and inference compute the same function
    seconds = {
        "train_batched": time_call(train_batched, args.repeats, device),
        "train_loop": time_call(train_loop, max(1, args.repeats - 1), device),
    }
    model.eval()
    seconds["infer_batched"] = time_call(infer_batched, args.repeats, device)
    seconds["infer_loop"] = time_call(infer_loop, max(1, args.repeats - 1), device)

    # How the batched model's cost grows with the document size (inference, same batch size).
    growth = []
    for sentences, words in [(5, 10), (10, 20), (15, 30), (30, 30), (15, 60)]:
        ids, m = (x.to(device) for x in random_documents(args.batch, sentences, words, args.vocab, seed=1))
        with torch.no_grad():
            elapsed = time_call(lambda ids=ids, m=m: model(ids, m), args.repeats, device)
        growth.append((sentences, words, int(m.sum()), elapsed))

    print(
        f"\nHAN (embedding 200, GRU 50+50, attention 100; {args.batch} documents of ≤ {args.max_sentences} sentences "
        f"× ≤ {args.max_words} words, {int(mask.sum())} words), torch {torch.__version__}, "
        f"{device_name(device)}; max |batched − loop| = {max(differences.values()):.1e}\n"
    )
    print(f"| {'measure':30s} | {'loop':>10s} | {'hf_attn':>10s} | {'ratio':>7s} |")
    print(f"|{'-' * 32}|{'-' * 12}|{'-' * 12}|{'-' * 9}|")
    for name, key in (("training (documents/s)", "train"), ("inference (documents/s)", "infer")):
        loop, ours = args.batch / seconds[f"{key}_loop"], args.batch / seconds[f"{key}_batched"]
        print(f"| {name:30s} | {loop:10.1f} | {ours:10.1f} | {ours / loop:7.2f} |")
    print(f"\n| {'max sentences × words':22s} | {'real words':>10s} | {'inference ms':>12s} | {'µs / word':>9s} |")
    print(f"|{'-' * 24}|{'-' * 12}|{'-' * 14}|{'-' * 11}|")
    for sentences, words, real, elapsed in growth:
        cell = f"{sentences} × {words}"
        print(f"| {cell:22s} | {real:10d} | {elapsed * 1e3:12.1f} | {elapsed / real * 1e6:9.2f} |")
    train_ratio = seconds["train_loop"] / seconds["train_batched"]
    inference_ratio = seconds["infer_loop"] / seconds["infer_batched"]
    print(f"RESULT train_ratio={train_ratio:.2f} inference_ratio={inference_ratio:.2f}")


if __name__ == "__main__":
    main()

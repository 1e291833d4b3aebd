"""A realistic CPU inference workload: text classification with a small
transformer encoder.

Batched requests of generated sentences go through a word-level tokenizer
written in Python, then through the model under torch.inference_mode().
Each batch is one `scope("step")`, so InferScope counts iterations; the
script runs unchanged without InferScope installed.

    python3 examples/infer.py [--batches N] [--batch-size N]

Deterministic: the sentences, the weights and the predictions are the same
on every run. About 10 s on 2 cores with OpenBLAS.
"""

import argparse
import random
import re
import statistics
import time

import torch
from torch import nn

try:
    from inferscope import mark, scope
except ImportError:  # not recording: the profiler's API becomes a no-op
    import contextlib

    def scope(name):
        return contextlib.nullcontext()

    def mark(name, **fields):
        pass


WORDS = (
    "the a an this that my your our their service product order delivery "
    "support team app update price quality battery screen camera sound "
    "package refund store staff manager account login payment card phone "
    "laptop keyboard driver setup manual was is were arrived broke works "
    "worked failed crashed loved hated liked returned replaced charged "
    "fast slow late early great terrible awful excellent fine poor good bad "
    "cheap expensive helpful rude friendly broken perfect noisy quiet and "
    "but very really never always again not too quite totally after before "
    "today yesterday week month twice once"
).split()

PAD, UNK, CLS = 0, 1, 2


class Tokenizer:
    """Word-level tokenizer: lowercase, strip punctuation, split on
    whitespace, look words up in a fixed vocabulary, pad or truncate."""

    _punct = re.compile(r"[^a-z0-9' ]+")

    def __init__(self, words, max_len):
        self.vocab = {"<pad>": PAD, "<unk>": UNK, "<cls>": CLS}
        for w in words:
            self.vocab.setdefault(w, len(self.vocab))
        self.max_len = max_len

    def normalize(self, text):
        return self._punct.sub(" ", text.lower())

    def encode(self, text):
        ids = [CLS]
        for word in self.normalize(text).split():
            ids.append(self.vocab.get(word, UNK))
        ids = ids[: self.max_len]
        return ids + [PAD] * (self.max_len - len(ids))

    def encode_batch(self, texts):
        ids = [self.encode(t) for t in texts]
        return torch.tensor(ids, dtype=torch.long)


class Classifier(nn.Module):
    """Embedding + learned positions, a stack of encoder layers, masked mean
    pooling and a linear head."""

    def __init__(self, vocab_size, max_len, d_model, heads, layers, classes):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=PAD)
        self.pos = nn.Embedding(max_len, d_model)
        layer = nn.TransformerEncoderLayer(
            d_model, heads, dim_feedforward=4 * d_model, dropout=0.1,
            batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers,
                                             enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, classes)

    def forward(self, ids):
        pad = ids.eq(PAD)
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.embed(ids) + self.pos(positions)
        x = self.encoder(x, src_key_padding_mask=pad)
        keep = (~pad).unsqueeze(-1).to(x.dtype)
        pooled = (x * keep).sum(1) / keep.sum(1).clamp(min=1.0)
        return self.head(self.norm(pooled))


def make_requests(rng, count):
    """Generate `count` review-like sentences of 8-60 words."""
    texts = []
    for _ in range(count):
        n = rng.randint(8, 60)
        words = [rng.choice(WORDS) for _ in range(n)]
        if rng.random() < 0.3:
            words.insert(rng.randrange(n), rng.choice(["wifi", "zzz", "b2b"]))
        texts.append(" ".join(words).capitalize() + rng.choice(".!?"))
    return texts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=16)
    args = ap.parse_args()

    torch.manual_seed(0)
    rng = random.Random(1234)
    max_len = 64
    tokenizer = Tokenizer(WORDS, max_len)
    model = Classifier(len(tokenizer.vocab), max_len, d_model=256, heads=8,
                       layers=4, classes=3)
    model.eval()

    labels = ("negative", "neutral", "positive")
    counts = [0, 0, 0]
    latencies = []
    start = time.perf_counter()
    with torch.inference_mode():
        for _ in range(args.batches):
            texts = make_requests(rng, args.batch_size)
            t0 = time.perf_counter()
            with scope("step"):
                ids = tokenizer.encode_batch(texts)
                mark("tokens", n=int(ids.ne(PAD).sum()))
                logits = model(ids)
                preds = logits.argmax(-1).tolist()
            latencies.append(time.perf_counter() - t0)
            for p in preds:
                counts[p] += 1
    elapsed = time.perf_counter() - start

    hist = ", ".join(f"{labels[i]}={counts[i]}" for i in range(3))
    print(f"infer.py: {args.batches} batches x {args.batch_size} requests, "
          f"{hist}; {elapsed:.2f} s, "
          f"p50 {statistics.median(latencies) * 1e3:.1f} ms/batch")


if __name__ == "__main__":
    main()

"""The call-heavy variant of infer.py: one request at a time (batch 1), a
Python-level subword tokenizer and a model made of many tiny modules, so
the interpreter makes well over 100k Python calls per second and the
tensor math is cheap. This is the worst case for a tracing profiler.

    python3 examples/infer_small.py [--requests N]

Deterministic; about 5 s on 2 cores.
"""

import argparse
import random
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


SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "to", "sa", "vi", "de", "po",
             "an", "el", "is", "on", "ur")


def is_word_char(ch):
    return ch.isalnum() or ch == "'"


def normalize(text):
    """Lowercase and replace everything but word characters by spaces, one
    character at a time (as many hand-written tokenizers do)."""
    out = []
    for ch in text:
        out.append(ch.lower() if is_word_char(ch) else " ")
    return "".join(out)


class SubwordTokenizer:
    """Greedy longest-match subword tokenizer over a tiny vocabulary."""

    def __init__(self, max_len):
        pieces = ["<pad>", "<unk>", "<cls>"]
        for a in SYLLABLES:
            pieces.append(a)
            for b in SYLLABLES[:6]:
                pieces.append(a + b)
        self.vocab = {p: i for i, p in enumerate(pieces)}
        self.max_len = max_len

    def split_word(self, word):
        ids = []
        i = 0
        while i < len(word):
            for j in range(min(len(word), i + 4), i, -1):
                piece = self.vocab.get(word[i:j])
                if piece is not None:
                    ids.append(piece)
                    i = j
                    break
            else:
                ids.append(1)
                i += 1
        return ids

    def encode(self, text):
        ids = [2]
        for word in normalize(text).split():
            ids.extend(self.split_word(word))
        ids = ids[: self.max_len]
        return torch.tensor([ids], dtype=torch.long)


class Gelu(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(0.79788456 * (x + 0.044715 * x * x * x)))


class Mix(nn.Module):
    """A tiny residual block: norm, linear, activation, linear."""

    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.up = nn.Linear(d, 2 * d)
        self.act = Gelu()
        self.down = nn.Linear(2 * d, d)

    def forward(self, x):
        return x + self.down(self.act(self.up(self.norm(x))))


class TinyModel(nn.Module):
    def __init__(self, vocab, d, depth, classes):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Mix(d) for _ in range(depth))
        self.head = nn.Linear(d, classes)

    def forward(self, ids):
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        return self.head(x.mean(1))


def make_request(rng):
    words = []
    for _ in range(rng.randint(6, 24)):
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4)))
        words.append(word.capitalize() if rng.random() < 0.1 else word)
    return " ".join(words) + rng.choice(".!?")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=8000)
    args = ap.parse_args()

    torch.manual_seed(0)
    rng = random.Random(99)
    tokenizer = SubwordTokenizer(max_len=48)
    model = TinyModel(len(tokenizer.vocab), d=16, depth=8, classes=4)
    model.eval()

    counts = [0, 0, 0, 0]
    latencies = []
    start = time.perf_counter()
    with torch.inference_mode():
        for _ in range(args.requests):
            text = make_request(rng)
            t0 = time.perf_counter()
            with scope("step"):
                ids = tokenizer.encode(text)
                mark("tokens", n=ids.shape[1])
                pred = int(model(ids).argmax(-1))
            latencies.append(time.perf_counter() - t0)
            counts[pred] += 1
    elapsed = time.perf_counter() - start

    print(f"infer_small.py: {args.requests} requests, classes {counts}; "
          f"{elapsed:.2f} s, p50 {statistics.median(latencies) * 1e6:.0f} us/request")


if __name__ == "__main__":
    main()

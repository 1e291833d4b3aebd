"""A pure-Python tokenizer feeding a small model: per-character and
per-word Python work (several M calls/s under the profile hook), then one
small forward per request."""
import sys

import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)
VOCAB = {}


def normalize(ch):
    return ch.lower() if ch.isalpha() else " "


def word_id(w):
    i = VOCAB.get(w)
    if i is None:
        i = VOCAB[w] = len(VOCAB) % 1000
    return i


def tokenize(text):
    chars = [normalize(c) for c in text]
    return [word_id(w) for w in "".join(chars).split()]


model = nn.Sequential(nn.EmbeddingBag(1000, 32), nn.Linear(32, 4)).eval()
text = "The quick brown fox, 42 jumps over the lazy dog; again and again! " * 8
requests = int(sys.argv[1]) if len(sys.argv) > 1 else 150
with torch.no_grad():
    for r in range(requests):
        ids = tokenize(text + str(r))
        y = model(torch.tensor([ids]))
print(float(y.sum()))

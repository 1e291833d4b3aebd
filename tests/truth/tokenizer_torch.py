"""Planted truth: a pure-Python tokenizer in a process that imported torch.

The script imports torch (and builds one tensor before the steps), then
each of 30 steps (scope "step") tokenizes a text of 40 000 words in
Python: lower-cases and splits it, strips punctuation, looks each word up
in a vocabulary dict (adding new ones), and collects the ids in a list.  No tensor is
touched inside the steps: the C code they run is the interpreter's str,
dict and list methods, none of it torch's.

Expected, by construction: of the time in iterations, torch ops are below
2 % (a margin for sampling), and the verdict is not op_compute_bound (no
op_compute_bound finding at all).
"""
import torch

try:
    from inferscope import scope
except ImportError:
    import contextlib

    def scope(name):
        return contextlib.nullcontext()

warm = torch.ones(4) * 2  # torch is loaded and used, before the steps only
words = ("the quick brown fox jumps over the lazy dog while seven tired "
         "engineers profile a tokenizer, counting words; punctuation: too!").split()
text = " ".join(words[i * 7 % len(words)] for i in range(40000))
vocab = {}


def tokenize(t):
    ids = []
    for word in t.lower().split():
        word = word.strip(",;:!.")
        i = vocab.get(word)
        if i is None:
            i = vocab[word] = len(vocab)
        ids.append(i)
    return ids


for step in range(30):
    with scope("step"):
        tokenize(text)

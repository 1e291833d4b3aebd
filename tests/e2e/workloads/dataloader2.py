"""e2e workload: a DataLoader with num_workers=2 (fork start method, the
Linux default) over a Dataset whose __getitem__ is Python code, feeding a
small model. Three processes: the main one and two workers."""

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Sentences(Dataset):
    def __init__(self, size, length):
        self.size = size
        self.length = length

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        ids = []
        state = index + 1
        for _ in range(self.length):
            state = (state * 48271) % 2147483647
            ids.append(state % 1000)
        return torch.tensor(ids, dtype=torch.long)


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.EmbeddingBag(1000, 64), nn.Linear(64, 4))
    model.eval()
    loader = DataLoader(Sentences(512, 128), batch_size=32, num_workers=2,
                        multiprocessing_context="fork")
    counts = [0, 0, 0, 0]
    with torch.inference_mode():
        for batch in loader:
            for p in model(batch).argmax(-1).tolist():
                counts[p] += 1
    print("dataloader2.py: predictions per class", counts)


if __name__ == "__main__":
    main()

import torch

def fn(xs):
    total = sum(t.sum() for t in xs)
    biggest = max(t.numel() for t in xs)
    return total * biggest

def args():
    return ([torch.ones(2), torch.ones(3)],)

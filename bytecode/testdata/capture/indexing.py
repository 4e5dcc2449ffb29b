import torch

def fn(x, idx):
    a = x[0]
    b = x[1:3, ::2]
    c = x[None, ..., -1]
    d = x[idx]
    x2 = x.clone()
    x2[:, 0] = 0.0
    return a, b, c, d, x2

def args():
    return (torch.randn(5, 4), torch.tensor([0, 4]))

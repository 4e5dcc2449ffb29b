import torch

def fn(x):
    # an int read from a tensor, and a float compared: each breaks the graph there
    n = x.long().sum().item()
    s = x.sum().item()
    if s > 0:
        return x / s + n
    return x * n

def args():
    return (torch.randn(2),)

import torch

def fn(x, mode, eps=None):
    if x.dim() == 2 and mode == "train":
        x = x * 2
    elif isinstance(mode, str):
        x = x - 1
    if eps is None:
        eps = 1e-5
    if x.shape[0] > 3:
        return x / (x.abs().sum() + eps)
    return x

def args():
    return (torch.randn(4, 3), "train")

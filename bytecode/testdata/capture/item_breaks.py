import torch

def fn(x):
    s = x.sum().item()
    return x / s

def args():
    return (torch.randn(2),)

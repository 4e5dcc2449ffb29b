import torch

CALLS = []

def fn(x):
    CALLS.append(1)
    return x + 1

def args():
    return (torch.randn(2),)

import torch

def fn(x):
    if x.mean() > 0:
        return x
    return -x

def args():
    return (torch.randn(2),)

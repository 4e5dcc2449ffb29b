import torch

LOG = []

def helper(t):
    LOG.append(t.shape[0])
    print("helper")
    return t * 3

def fn(x):
    y = x + 1
    z = helper(y)
    return z - 1

def args():
    return (torch.randn(2),)

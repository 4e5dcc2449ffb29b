import torch

def fn(x, y):
    a = x + y
    b = a * 2.0
    return torch.relu(b) - y

def args():
    return (torch.randn(4, 8), torch.randn(4, 8))

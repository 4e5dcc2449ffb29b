import torch

w = torch.randn(4, 2)


def fn(x):
    try:
        y = x @ w  # eager raises, and the except clause catches it
    except RuntimeError:
        y = x[:, :2]
    return y * 2


def args():
    return (torch.randn(3, 5),)

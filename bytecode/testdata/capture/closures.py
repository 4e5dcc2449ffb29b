import torch

def make(k):
    def inner(x):
        return x * k
    return inner

mul3 = make(3)

def fn(x):
    bias = 1.0
    def add_bias(t):
        return t + bias
    return add_bias(mul3(x))

def args():
    return (torch.randn(3),)

import torch

def fn(x):
    for i in range(2):
        x = x * 2
        print(i)
    return x

def args():
    return (torch.randn(2),)

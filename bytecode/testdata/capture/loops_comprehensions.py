import torch

def fn(xs, n):
    out = xs[0]
    for i in range(1, n):
        out = out + xs[i] * i
    squares = [t * t for t in xs]
    total = sum(squares)
    return out, total, {f"k{i}": i for i in range(2)}

def args():
    return ([torch.ones(2), torch.ones(2), torch.ones(2)], 3)

import math
import torch

def fn(x, sizes):
    m = max(sizes)
    n = min(s for s in sizes)
    total = sum(sizes)
    scale = 1.0 / math.sqrt(x.shape[-1])
    pairs = list(zip(range(len(sizes)), sizes))
    ok = all(s > 0 for s in sizes) and any(s > 2 for s in sizes)
    return x * scale * m + n + total + len(pairs) + int(ok) + abs(-2) + round(2.6)

def args():
    return (torch.randn(2, 4), (1, 2, 3))

import torch

def fn(x, tag):
    y = x.exp()
    return {"out": y, "tag": tag, "shape": y.shape, "pair": (x, [y, None])}

def args():
    return (torch.randn(2), "t")

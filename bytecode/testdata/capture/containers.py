import torch

def fn(x, cfg):
    d = dict(cfg)
    d["extra"] = 1
    parts = list(x.split(2))
    parts.append(x[:1])
    a, *rest = parts
    return torch.cat(rest + [a]) * d["scale"] + len(d)

def args():
    return (torch.randn(6, 2), {"scale": 2.0})

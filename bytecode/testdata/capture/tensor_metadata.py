import torch

def fn(x):
    n, c = x.shape
    y = x.view(n * c)
    if x.dtype == torch.float32 and x.device.type == "cpu" and not x.requires_grad:
        y = y + x.numel()
    return y.reshape(c, -1), x.size(1), x.stride()

def args():
    return (torch.randn(3, 4),)

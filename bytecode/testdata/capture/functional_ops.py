import torch
import torch.nn.functional as F

def fn(x, w, b):
    h = F.linear(x, w, b)
    h = F.layer_norm(h, (h.shape[-1],))
    h = F.dropout(h, p=0.1, training=False)
    p = F.softmax(h, dim=-1)
    return F.gelu(p, approximate="tanh"), torch.max(h, dim=-1)

def args():
    return (torch.randn(2, 4), torch.randn(6, 4), torch.randn(6))

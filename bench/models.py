"""The benchmark workloads (issue 3): small but real models, each with example inputs.

Each entry: name -> (make_model, make_inputs, grad) where grad says whether the workload runs
with autograd (False: inference under torch.no_grad()).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class GeluMLP(nn.Module):
    def __init__(self, d=512, hidden=2048):
        super().__init__()
        self.fc1 = nn.Linear(d, hidden)
        self.fc2 = nn.Linear(hidden, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class NormSoftmaxChain(nn.Module):
    """LayerNorm → scale → softmax → LayerNorm, the reduction-heavy chain of attention blocks."""

    def __init__(self, d=1024):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.ln2 = nn.LayerNorm(d)

    def forward(self, x):
        h = self.ln1(x) * 0.125
        p = torch.softmax(h, dim=-1)
        return self.ln2(p * x + x)


class PointwiseChain(nn.Module):
    """Ten pointwise ops over two tensors: bandwidth bound, the best case for fusion."""

    def forward(self, a, b):
        x = a * b + 1.0
        x = torch.sigmoid(x) * a
        x = torch.tanh(x - b)
        x = x * x + a
        x = torch.relu(x) - 0.5
        return x / (b.abs() + 1.0)


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class RMSNormSiLU(nn.Module):
    """RMS norm + SwiGLU feed-forward (LLaMA style)."""

    def __init__(self, d=512, hidden=1024):
        super().__init__()
        self.norm = RMSNorm(d)
        self.gate = nn.Linear(d, hidden, bias=False)
        self.up = nn.Linear(d, hidden, bias=False)
        self.down = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        h = self.norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class GPTBlock(nn.Module):
    def __init__(self, d=256, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=-1)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.shape[-1]))
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.body(x).flatten(1))


def encoder_layer():
    return nn.TransformerEncoderLayer(256, 4, dim_feedforward=1024, dropout=0.0, batch_first=True,
                                      norm_first=True)


WORKLOADS = {
    "gelu_mlp": (GeluMLP, lambda: [torch.randn(64, 512)], False),
    "norm_softmax_chain": (NormSoftmaxChain, lambda: [torch.randn(256, 1024)], False),
    "pointwise_chain": (PointwiseChain, lambda: [torch.randn(1024, 1024), torch.randn(1024, 1024)], False),
    "rmsnorm_silu": (RMSNormSiLU, lambda: [torch.randn(4, 64, 512)], False),
    "gpt_block": (GPTBlock, lambda: [torch.randn(4, 64, 256)], False),
    "transformer_encoder_layer": (encoder_layer, lambda: [torch.randn(4, 64, 256)], False),
    "small_cnn": (lambda: SmallCNN().eval(), lambda: [torch.randn(8, 3, 32, 32)], False),
    "gelu_mlp_train": (GeluMLP, lambda: [torch.randn(64, 512)], True),
}


def _vision(name):
    def make():
        import torchvision

        return getattr(torchvision.models, name)().eval()
    return make


# Real models (issue 12): torchvision's builders at their ImageNet size, one image, inference.
# Not in the tests (test_zoo.py runs the whole zoo at small sizes); bench/run.py measures them
# beside WORKLOADS.
VISION = {name: (_vision(name), lambda: [torch.randn(1, 3, 224, 224)], False)
          for name in ("resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0",
                       "shufflenet_v2_x1_0", "convnext_tiny", "vit_b_16", "swin_t")}

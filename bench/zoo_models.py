"""The model zoo: every classification model torchvision 0.14 ships, plus torch.nn's attention,
transformer and recurrent modules, each with small example inputs.

Shared by tests/test_zoo.py (eager comparison, graph counts, recompiles) and bench/zoo.py (the
report). Each entry of ZOO is a ZooModel:

- make(): a fresh model (call under a fixed seed for identical weights),
- inputs(): example inputs (a list of positional tensors); train_inputs() where train mode needs
  others (inception_v3's auxiliary classifier),
- kwargs: keyword arguments of the call (need_weights, masks, ...),
- size, train_size: the input sizes in words, for reports,
- config: how the model differs from torchvision's builder of that name ("" = the builder itself).

Vision models take 2x3x64x64 images where the architecture allows. The transformers
(vit_b_16, swin_t, swin_v2_t, maxvit_t) are torchvision's own classes (VisionTransformer,
SwinTransformer, MaxVit) — the same modules and forward code as the builders — with smaller
configurations so that a 64x64 image (or 32x32 for the ViT) runs in milliseconds; the builder's
configuration is named in ``config``.
"""
import functools

import torch
import torch.nn as nn
import torchvision.models as tvm
from torchvision.models.maxvit import MaxVit
from torchvision.models.swin_transformer import PatchMergingV2, SwinTransformer, SwinTransformerBlockV2
from torchvision.models.vision_transformer import VisionTransformer


class ZooModel:
    __slots__ = ("name", "make", "inputs", "train_inputs", "kwargs", "size", "train_size", "config", "family")

    def __init__(self, name, make, inputs, size, config="", kwargs=None, family="torchvision", train_inputs=None,
                 train_size=None):
        self.name = name
        self.make = make
        self.inputs = inputs
        self.train_inputs = train_inputs  # inputs in train mode when they differ (None: inputs)
        self.kwargs = dict(kwargs or {})
        self.size = size
        self.train_size = train_size or size
        self.config = config
        self.family = family


def _images(n=2, hw=64):
    return lambda: [torch.randn(n, 3, hw, hw)]


IMG = "2x3x64x64"
ZOO = {}


def _add(name, make, inputs=None, size=IMG, **kw):
    ZOO[name] = ZooModel(name, make, inputs or _images(), size, **kw)


# torchvision's builders as they are (weights=None: random initialisation).
for _name in ("resnet18", "resnet50", "resnext50_32x4d", "wide_resnet50_2", "mobilenet_v2", "mobilenet_v3_small",
              "mobilenet_v3_large", "efficientnet_b0", "efficientnet_v2_s", "convnext_tiny", "regnet_y_400mf",
              "regnet_x_400mf", "densenet121", "shufflenet_v2_x0_5", "squeezenet1_0", "squeezenet1_1",
              "mnasnet0_5", "alexnet", "vgg11", "vgg11_bn"):
    _add(_name, getattr(tvm, _name))

# GoogLeNet and Inception3 warn about their default initialisation unless it is named.
_add("googlenet", functools.partial(tvm.googlenet, init_weights=True))
# Inception3 needs at least 75x75 (2x3x128x128 in eval); its auxiliary classifier, which runs in
# train mode only, pools 5x5 at stride 3 and then convolves 5x5, which needs Mixed_6e's 17x17 of a
# 299x299 image (no smaller size in 200..299 works).
_add("inception_v3", functools.partial(tvm.inception_v3, init_weights=True), _images(hw=128),
     "2x3x128x128", train_inputs=_images(hw=299), train_size="2x3x299x299")

# vit_b_16 is VisionTransformer(image_size=224, patch_size=16, num_layers=12, num_heads=12,
# hidden_dim=768, mlp_dim=3072): same class, smaller numbers.
_add("vit_b_16", lambda: VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64,
                                           mlp_dim=128, dropout=0.1, attention_dropout=0.1),
     _images(hw=32), "2x3x32x32",
     config="VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128, "
            "dropout=0.1, attention_dropout=0.1)")
# swin_t: SwinTransformer(patch_size=[4, 4], embed_dim=96, depths=[2, 2, 6, 2], num_heads=[3, 6, 12, 24],
# window_size=[7, 7], stochastic_depth_prob=0.2).
_add("swin_t", lambda: SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2, 2, 2], num_heads=[2, 2, 4, 4],
                                       window_size=[4, 4], stochastic_depth_prob=0.2),
     config="SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2, 2, 2], num_heads=[2, 2, 4, 4], "
            "window_size=[4, 4], stochastic_depth_prob=0.2)")
# swin_v2_t: the same with SwinTransformerBlockV2 / PatchMergingV2 and window_size=[8, 8].
_add("swin_v2_t", lambda: SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2, 2, 2], num_heads=[2, 2, 4, 4],
                                          window_size=[4, 4], stochastic_depth_prob=0.2, block=SwinTransformerBlockV2,
                                          downsample_layer=PatchMergingV2),
     config="SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2, 2, 2], num_heads=[2, 2, 4, 4], "
            "window_size=[4, 4], stochastic_depth_prob=0.2, block=SwinTransformerBlockV2, "
            "downsample_layer=PatchMergingV2)")
# maxvit_t: MaxVit(input_size=(224, 224), stem_channels=64, block_channels=[64, 128, 256, 512],
# block_layers=[2, 2, 5, 2], head_dim=32, stochastic_depth_prob=0.2, partition_size=7).
_add("maxvit_t", lambda: MaxVit(input_size=(64, 64), stem_channels=32, block_channels=[32, 64, 128, 256],
                                block_layers=[1, 1, 2, 1], head_dim=16, stochastic_depth_prob=0.2, partition_size=2,
                                num_classes=1000),
     config="MaxVit(input_size=(64, 64), stem_channels=32, block_channels=[32, 64, 128, 256], "
            "block_layers=[1, 1, 2, 1], head_dim=16, stochastic_depth_prob=0.2, partition_size=2)")


# torch.nn's attention, transformer and recurrent modules.
D_MODEL, SEQ = 64, 10


def _tokens():
    return [torch.randn(2, SEQ, D_MODEL)]


def _padding_mask():
    m = torch.zeros(2, SEQ, dtype=torch.bool)
    m[1, 6:] = True  # the second sequence has 6 tokens
    return m


def _causal_mask():
    return torch.triu(torch.full((SEQ, SEQ), float("-inf")), diagonal=1)


def _encoder():
    layer = nn.TransformerEncoderLayer(D_MODEL, 4, dim_feedforward=128, dropout=0.1, batch_first=True)
    return nn.TransformerEncoder(layer, num_layers=2)


def _mha():
    return nn.MultiheadAttention(D_MODEL, 4, dropout=0.1, batch_first=True)


class SelfAttention(nn.Module):
    """``mha(x, x, x, ...)``: nn.MultiheadAttention called as self-attention."""

    def __init__(self):
        super().__init__()
        self.mha = _mha()

    def forward(self, x, need_weights=True, attn_mask=None):
        return self.mha(x, x, x, need_weights=need_weights, attn_mask=attn_mask)


TOK = "2x%dx%d" % (SEQ, D_MODEL)
_add("transformer_encoder", _encoder, _tokens, TOK, family="nn",
     config="TransformerEncoder(TransformerEncoderLayer(64, 4, dim_feedforward=128, dropout=0.1, batch_first=True), 2)")
ZOO["transformer_encoder_padding_mask"] = ZooModel(
    "transformer_encoder_padding_mask", _encoder, _tokens, TOK + " + 2x10 src_key_padding_mask",
    config=ZOO["transformer_encoder"].config + ", src_key_padding_mask (second sequence: 6 tokens)",
    kwargs={"src_key_padding_mask": _padding_mask()}, family="nn")
for _nw in (True, False):
    ZOO["mha_need_weights_%s" % _nw] = ZooModel(
        "mha_need_weights_%s" % _nw, SelfAttention, _tokens, TOK, kwargs={"need_weights": _nw}, family="nn",
        config="MultiheadAttention(64, 4, dropout=0.1, batch_first=True), self-attention, need_weights=%s" % _nw)
ZOO["mha_attn_mask"] = ZooModel(
    "mha_attn_mask", SelfAttention, _tokens, TOK + " + 10x10 causal attn_mask",
    kwargs={"need_weights": False, "attn_mask": _causal_mask()}, family="nn",
    config="MultiheadAttention(64, 4, dropout=0.1, batch_first=True), self-attention, float causal attn_mask")
_add("lstm", lambda: nn.LSTM(16, 32, num_layers=2, batch_first=True, bidirectional=True, dropout=0.1),
     lambda: [torch.randn(2, 7, 16)], "2x7x16", family="nn",
     config="LSTM(16, 32, num_layers=2, batch_first=True, bidirectional=True, dropout=0.1)")
_add("gru", lambda: nn.GRU(16, 32, num_layers=2, batch_first=True, bidirectional=True, dropout=0.1),
     lambda: [torch.randn(2, 7, 16)], "2x7x16", family="nn",
     config="GRU(16, 32, num_layers=2, batch_first=True, bidirectional=True, dropout=0.1)")


def make(name, seed=0, train=False):
    """The model (seeded: the same weights every time), its inputs and keyword arguments."""
    torch.manual_seed(seed)
    model = ZOO[name].make()
    return (model,) + example_inputs(name, seed, train)


def example_inputs(name, seed=0, train=False):
    """(inputs, kwargs), seeded; train: the inputs for train mode."""
    spec = ZOO[name]
    torch.manual_seed(seed + 1)
    inputs = spec.train_inputs if train and spec.train_inputs is not None else spec.inputs
    return inputs(), dict(spec.kwargs)


def tensors(out):
    """The tensors of a model's output, in order (namedtuples, tuples, nested)."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in tensors(o)]
    if isinstance(out, dict):
        return [t for o in out.values() for t in tensors(o)]
    return []

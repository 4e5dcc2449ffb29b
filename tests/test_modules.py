"""torch.nn modules and whole models, captured as one graph with no fallback."""
import pytest
import torch
import torch.nn as nn

import ptgo
from conftest import assert_same


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.act = nn.GELU()
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(self.drop(self.act(self.fc1(x))))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.AvgPool2d(2),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = self.features(x)
        x = self.pool(x).flatten(1)
        return self.head(x)


class Encoder(nn.Module):
    def __init__(self, d=32, heads=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(50, d)
        self.layers = nn.ModuleList(
            [nn.TransformerEncoderLayer(d, heads, dim_feedforward=64, dropout=0.0, batch_first=True) for _ in range(layers)]
        )
        self.norm = nn.LayerNorm(d)

    def forward(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x).mean(1)


def check_model(model, inputs, counter, train=False, grad=True):
    torch.manual_seed(0)
    model.train(train)
    compiled = ptgo.compile(model, backend=counter)
    ctx = torch.enable_grad() if grad else torch.no_grad()
    with ctx:
        torch.manual_seed(1)
        out = compiled(*inputs)
        torch.manual_seed(1)
        ref = model(*inputs)
    assert_same(out, ref)
    assert counter.frame_count == 1, "captured %d graphs" % counter.frame_count
    assert counter.calls == 1
    return out, ref


def test_mlp_one_graph(counter):
    out, ref = check_model(MLP(), [torch.randn(4, 16)], counter)
    assert counter.op_count() >= 3  # fc1, gelu, fc2 (eval dropout returns its input itself, as eager)
    # gradients match
    out.sum().backward()


def test_mlp_gradients(counter):
    torch.manual_seed(0)
    m1 = MLP().eval()
    m2 = MLP().eval()
    m2.load_state_dict(m1.state_dict())
    x = torch.randn(4, 16)
    ptgo.compile(m1, backend=counter)(x).pow(2).sum().backward()
    m2(x).pow(2).sum().backward()
    for (n1, p1), (n2, p2) in zip(m1.named_parameters(), m2.named_parameters()):
        assert n1 == n2
        assert_same(p1.grad, p2.grad, n1)


def test_cnn_eval_one_graph(counter):
    check_model(CNN(), [torch.randn(2, 3, 16, 16)], counter, grad=False)
    assert counter.op_count() >= 10


def test_cnn_train_batchnorm_updates_stats(counter):
    torch.manual_seed(0)
    m1, m2 = CNN(), CNN()
    m2.load_state_dict(m1.state_dict())
    x = torch.randn(4, 3, 8, 8)
    out = ptgo.compile(m1, backend=counter)(x)
    ref = m2(x)
    assert_same(out, ref)
    sd1, sd2 = m1.state_dict(), m2.state_dict()
    for k in sd2:
        assert_same(sd1[k], sd2[k], k)
    assert counter.frame_count == 1


def test_transformer_encoder_one_graph(counter):
    tokens = torch.randint(0, 50, (2, 7))
    check_model(Encoder(), [tokens], counter, grad=False)
    assert counter.op_count() >= 4  # eval + no_grad takes the fused fast path, as eager does


def test_transformer_encoder_training_grad(counter):
    tokens = torch.randint(0, 50, (2, 5))
    check_model(Encoder(), [tokens], counter, train=True)


MODULES = {
    "Linear": (lambda: nn.Linear(8, 4), lambda: [torch.randn(3, 8)]),
    "Conv1d": (lambda: nn.Conv1d(3, 4, 3, padding=1), lambda: [torch.randn(2, 3, 10)]),
    "Conv2d": (lambda: nn.Conv2d(3, 4, 3, stride=2), lambda: [torch.randn(2, 3, 9, 9)]),
    "BatchNorm1d_eval": (lambda: nn.BatchNorm1d(6).eval(), lambda: [torch.randn(4, 6)]),
    "BatchNorm2d_train": (lambda: nn.BatchNorm2d(3), lambda: [torch.randn(4, 3, 5, 5)]),
    "LayerNorm": (lambda: nn.LayerNorm(8), lambda: [torch.randn(2, 3, 8)]),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), lambda: [torch.randn(2, 4, 3, 3)]),
    "Embedding": (lambda: nn.Embedding(10, 4), lambda: [torch.randint(0, 10, (3, 5))]),
    # (with a ReLU: eval dropout returns its input itself, as eager, which alone captures no graph)
    "Dropout_eval": (lambda: nn.Sequential(nn.Dropout(0.5), nn.ReLU()).eval(), lambda: [torch.randn(8)]),
    "ReLU": (lambda: nn.ReLU(), lambda: [torch.randn(8)]),
    "GELU": (lambda: nn.GELU(), lambda: [torch.randn(8)]),
    "SiLU": (lambda: nn.SiLU(), lambda: [torch.randn(8)]),
    "Tanh": (lambda: nn.Tanh(), lambda: [torch.randn(8)]),
    "Sigmoid": (lambda: nn.Sigmoid(), lambda: [torch.randn(8)]),
    "Softmax": (lambda: nn.Softmax(dim=-1), lambda: [torch.randn(2, 8)]),
    "LeakyReLU": (lambda: nn.LeakyReLU(0.1), lambda: [torch.randn(8)]),
    "MaxPool2d": (lambda: nn.MaxPool2d(2), lambda: [torch.randn(1, 2, 4, 4)]),
    "AvgPool1d": (lambda: nn.AvgPool1d(2), lambda: [torch.randn(1, 2, 8)]),
    "AdaptiveAvgPool2d": (lambda: nn.AdaptiveAvgPool2d((2, 2)), lambda: [torch.randn(1, 2, 6, 6)]),
    "Flatten": (lambda: nn.Flatten(), lambda: [torch.randn(2, 3, 4)]),
    "Identity": (lambda: nn.Sequential(nn.Identity(), nn.Linear(4, 4)), lambda: [torch.randn(2, 4)]),
    "Sequential": (lambda: nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)), lambda: [torch.randn(3, 4)]),
    "MultiheadAttention": (lambda: nn.MultiheadAttention(16, 4, batch_first=True).eval(),
                           lambda: [torch.randn(2, 5, 16)] * 3),
    "TransformerEncoderLayer": (lambda: nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0).eval(),
                                lambda: [torch.randn(5, 2, 16)]),
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module(name, counter):
    make, inputs = MODULES[name]
    torch.manual_seed(0)
    m = make()
    args = inputs()
    check_model(m, args, counter, train=m.training, grad=False)


class UsesModuleList(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 1), "b": nn.Linear(4, 2)})
        self.scale = 0.5

    def forward(self, x):
        for i, b in enumerate(self.blocks):
            x = x + b(x) * self.scale * (i + 1)
        return {k: h(x) for k, h in self.heads.items()}


def test_module_containers(counter):
    check_model(UsesModuleList(), [torch.randn(2, 4)], counter, grad=False)


class WithHelpers(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 6)
        self.register_buffer("offset", torch.arange(6.0))

    def _act(self, x, *, slope=0.1):
        return torch.where(x > 0, x, x * slope)

    @property
    def width(self):
        return self.proj.in_features

    def forward(self, x, scale=2.0):
        y = self._act(self.proj(x), slope=0.2) + self.offset
        return y.view(-1, self.width) * scale


def test_methods_properties_buffers_defaults(counter):
    check_model(WithHelpers(), [torch.randn(3, 6)], counter, grad=False)


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x)


class Child(Base):
    def forward(self, x):
        return super().forward(x) * 2


def test_super_call(counter):
    check_model(Child(), [torch.randn(2, 3)], counter, grad=False)


def test_state_dict_keys_equal(counter):
    m = CNN()
    c = ptgo.compile(m, backend=counter)
    assert list(c.state_dict().keys()) == list(m.state_dict().keys())
    assert [n for n, _ in c.named_parameters()] == [n for n, _ in m.named_parameters()]
    assert all(a is b for a, b in zip(c.parameters(), m.parameters()))
    c.load_state_dict(m.state_dict())


def test_graph_module_has_original_parameter_names(counter):
    m = MLP().eval()
    ptgo.compile(m, backend=counter)(torch.randn(2, 16))
    gm = counter.graphs[0]
    params = dict(gm.named_parameters())
    assert set(params) == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}
    assert params["fc1.weight"] is m.fc1.weight


def _inductor_case(make, inputs, train, grad):
    torch.manual_seed(0)
    m = make()
    m.train(train)
    args = inputs() if callable(inputs) else inputs
    ctx = torch.enable_grad() if grad else torch.no_grad()
    with ctx:
        compiled = ptgo.compile(m)
        torch.manual_seed(1)
        out = compiled(*args)
        torch.manual_seed(1)
        ref = m(*args)
        assert_same(out, ref)
        torch.manual_seed(2)
        out2 = compiled(*args)
        torch.manual_seed(2)
        assert_same(out2, m(*args))
    first = out[0] if isinstance(out, tuple) else out
    if grad and first.requires_grad:
        first.float().sum().backward()


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_inductor(name, grad):
    make, inputs = MODULES[name]
    torch.manual_seed(0)
    train = make().training
    _inductor_case(make, inputs, train, grad)


@pytest.mark.parametrize("model", ["mlp", "cnn", "encoder"])
@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
def test_models_inductor(model, train):
    make, inputs = {"mlp": (MLP, lambda: [torch.randn(4, 16)]),
                    "cnn": (CNN, lambda: [torch.randn(2, 3, 16, 16)]),
                    "encoder": (Encoder, lambda: [torch.randint(0, 50, (2, 7))])}[model]
    _inductor_case(make, inputs, train, grad=train)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
@pytest.mark.parametrize("train", [True, False])
def test_batch_norm_of_an_empty_int_input_is_float_and_differentiable(backend, train):
    """Fuzz seed 9090: torch's batch_norm of an empty input is input.clone() * weight[0] +
    bias[0], so an int input gives a float result that requires grad; the compiled graph gave an
    int tensor without grad, and a later F.linear of it hit torch's isDifferentiableType assert."""
    import torch.nn as nn

    def run(compile_):
        torch.manual_seed(0)
        bn = nn.BatchNorm1d(3, momentum=None).train(train)
        f = (lambda x: bn(x)) if not compile_ else ptgo.compile(lambda x: bn(x), backend=backend)
        y = f(torch.zeros(0, 3, dtype=torch.int32))
        y.sum().backward()
        return y, bn.weight.grad, bn.bias.grad, bn.running_mean, bn.num_batches_tracked

    want, got = run(False), run(True)
    assert (got[0].dtype, got[0].shape, got[0].requires_grad) == (want[0].dtype, want[0].shape, want[0].requires_grad)
    for w, g in zip(want[1:], got[1:]):
        assert_same(g, w)

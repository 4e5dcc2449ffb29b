"""Hugging Face transformers, as pip installs it into the torch 2 virtualenv's site-packages:
models built from small random configs (nothing is downloaded) compile to few graphs, with every
break named, and equal eager. The Python they are made of is tested first without transformers
(its configuration's __getattribute__, its ModelOutput dict subclass, inspect.signature of a
forward chunk, parameter memo sets, resume after a break in a frame with cell variables).

`make setup` installs transformers into .venv-torch2; without it (a checkout set up by hand, or
torch 1.13's venv) the model tests are skipped, except under CI on torch 2, where it is required.
"""
import collections
import copy
import dataclasses
import inspect
import json
import os
import subprocess
import sys
import warnings

import pytest
import torch

import ptgo

TORCH2 = int(torch.__version__.split(".")[0]) >= 2


# ---- the Python transformers is made of, without transformers --------------------------------

class Config:
    """PretrainedConfig's attribute lookup: names in attribute_map are aliases."""
    attribute_map = {"hidden_size": "n_embd"}

    def __init__(self):
        self.n_embd = 4
        self.scale = 2.0

    def __getattribute__(self, key):
        if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        return super().__getattribute__(key)


def read_config(cfg, x):
    # LOAD_ATTR on a live object reads it through Python's getattr; calling the override runs
    # its code, whose super().__getattribute__ is object's lookup.
    return x * cfg.__getattribute__("hidden_size") + cfg.__getattribute__("scale") + object.__getattribute__(cfg, "n_embd")


def test_config_getattribute_one_graph_and_guarded():
    cfg, x = Config(), torch.randn(3)
    ex = ptgo.explain(read_config)(cfg, x)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), [str(b) for b in ex.break_reasons]
    f = ptgo.compile(read_config)
    assert torch.equal(f(cfg, x), read_config(cfg, x))
    cfg.n_embd = 5  # read again through object.__getattribute__ by the guards
    assert torch.equal(f(cfg, x), read_config(cfg, x))
    cfg.scale = 7.0
    assert torch.equal(f(cfg, x), read_config(cfg, x))
    Config.attribute_map = {"hidden_size": "scale"}  # the alias now names another attribute
    try:
        assert torch.equal(f(cfg, x), read_config(cfg, x))
    finally:
        Config.attribute_map = {"hidden_size": "n_embd"}
    assert torch.equal(f(Config(), x), read_config(Config(), x))


@dataclasses.dataclass
class Output(collections.OrderedDict):
    """ModelOutput's shape: an OrderedDict subclass whose fields are also attributes."""
    last: torch.Tensor = None
    extra: torch.Tensor = None

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is not None:
                self[f.name] = v

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


def use_output(out, x):
    t = out.to_tuple()
    return t[0] + x * len(out), list(out.items())[-1][1], "extra" in out


def test_live_dict_subclass_reads_one_graph_and_guarded():
    x = torch.randn(3)
    out = Output(last=torch.randn(3), extra=torch.randn(3))
    ex = ptgo.explain(use_output)(out, x)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), [str(b) for b in ex.break_reasons]
    f = ptgo.compile(use_output)
    for o in (out, Output(last=torch.randn(3)), Output(last=torch.randn(3), extra=torch.randn(3))):
        got, want = f(o, x), use_output(o, x)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1]) and got[2] == want[2]
    o = Output(last=torch.randn(3), extra=torch.randn(3))
    f(o, x)
    o.move_to_end("last")  # the OrderedDict's own order changes, its storage's does not
    got, want = f(o, x), use_output(o, x)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


class Renamed(collections.OrderedDict):
    def __getitem__(self, k):  # answers otherwise than the storage
        return super().__getitem__("b" if k == "a" else k)


def test_live_dict_subclass_values_are_read_from_its_storage():
    def first_value(d, x):
        return x + list(d.values())[0]

    d = Renamed(a=torch.ones(2), b=torch.zeros(2))
    x = torch.randn(2)
    assert torch.equal(ptgo.compile(first_value)(d, x), first_value(d, x))


def test_ordered_dict_argument_order_is_iteration_order():
    def keys_of(d, x):
        return [k for k in d], x + d["a"]

    d = collections.OrderedDict(a=1.0, b=2.0)
    f = ptgo.compile(keys_of)
    x = torch.randn(2)
    assert f(d, x)[0] == ["a", "b"]
    d.move_to_end("a")
    assert f(d, x)[0] == keys_of(d, x)[0] == ["b", "a"]


class Chunked(torch.nn.Module):
    """apply_chunking_to_forward counts its forward function's parameters."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def chunk(self, h: torch.Tensor) -> torch.Tensor:
        return self.lin(h)

    def forward(self, x):
        n = len(inspect.signature(self.chunk).parameters)
        assert n == 1
        return self.chunk(x) * n


def test_inspect_signature_folded_and_guarded():
    torch.manual_seed(0)
    m, x = Chunked().eval(), torch.randn(2, 4)
    ex = ptgo.explain(m)(x)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), [str(b) for b in ex.break_reasons]
    assert torch.equal(ptgo.compile(m)(x), m(x))

    def g(a, b=1):
        return a

    def count(x):
        return x * len(inspect.signature(g).parameters)

    f = ptgo.compile(count)
    assert torch.equal(f(x), count(x))
    g.__code__ = (lambda a, b=1, c=2: a).__code__  # a third parameter
    assert torch.equal(f(x), count(x)) and torch.equal(f(x), x * 3)
    g.__annotations__["a"] = int
    assert torch.equal(f(x), count(x))


def test_parameter_memo_set_is_identity():
    lin = torch.nn.Linear(3, 3)

    def first_float(m, x):
        # transformers' get_parameter_dtype: named_parameters keeps a memo set of tensors
        for p in m.parameters():
            if p.is_floating_point():
                return x.to(p.dtype) + 1
        return x

    ex = ptgo.explain(first_float)(lin, torch.randn(2))
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), [str(b) for b in ex.break_reasons]

    def member(a, b, x):
        return x + (1 if a in {b} else 2) + (3 if a in {a: 0} else 4)

    a, b = torch.randn(2), torch.randn(2)
    f = ptgo.compile(member)
    assert torch.equal(f(a, b, a), member(a, b, a))
    assert torch.equal(f(a, a, a), member(a, a, a))  # decided by identity: guarded


def test_identity_of_two_tensor_arguments_is_guarded():
    def same(a, b, c, x):
        return x + (1 if a is b else 2) + (4 if b is c else 8)

    f = ptgo.compile(same)
    a, b, c = torch.randn(2), torch.randn(2), torch.randn(2)
    for args in ((a, b, c), (a, a, c), (a, b, b), (a, a, a), (a, b, c)):
        assert torch.equal(f(*args, a), same(*args, a)), args


def cell_then_break(x, n):
    y = x + 1
    if n.sum() > 0:  # a break while y is a cell no closure holds yet
        x = x * 2
    g = lambda: y * 3  # noqa: E731
    return g() + x


def argument_cell_then_break(x, n):
    if n.sum() > 0:  # x is an argument and a cell
        x = x * 2
    g = lambda: x * 3  # noqa: E731
    return g()


def closure_then_break(x, n):
    y = x + 1
    g = lambda: y * 3  # noqa: E731
    if n.sum() > 0:  # a break after a closure took y's cell: the frame runs eagerly
        x = x * 2
    y = y + 100
    return g() + x


@pytest.mark.parametrize("fn", [cell_then_break, argument_cell_then_break, closure_then_break])
def test_break_in_a_frame_with_cells(fn):
    f = ptgo.compile(fn)
    for n in (torch.ones(2), -torch.ones(2)):
        x = torch.randn(3)
        assert torch.equal(f(x, n), fn(x, n))
    kinds = {b.kind for b in ptgo.explain(fn)(x, n).break_reasons}
    assert kinds == ({"runs eagerly"} if fn is closure_then_break else {"graph break"})


# ---- transformers models ---------------------------------------------------------------------

try:
    import transformers
except ImportError:
    if os.environ.get("CI") and TORCH2:
        raise  # CI installs it into .venv-torch2 (make setup): missing is a failure there
    transformers = None

SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, vocab_size=1000)

# The breaks each model keeps, by reason. The attention-mask helpers ask
# torch.all(attention_mask == 1) to skip building a mask eager does not need: a branch on a
# tensor's value, which eager takes too; torch.compile avoids it only because transformers'
# is_torchdynamo_compiling() is True under Dynamo and the code then always builds the mask.
# T5 warns once through logger.warning_once (an lru_cache'd function: a log record ptgo does
# not drop).
DATA_DEPENDENT = "the truth value of a tensor (data-dependent control flow)"
LOG = "a log record at level 30 that the logger emits"

# name -> (config and class, the most graphs, the reasons allowed)
MODELS = {
    "bert": (lambda T: (T.BertConfig(**SMALL), T.BertModel), 3, {DATA_DEPENDENT}),
    "gpt2": (lambda T: (T.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=1000), T.GPT2LMHeadModel), 4, {DATA_DEPENDENT}),
    "llama": (lambda T: (T.LlamaConfig(**SMALL, num_key_value_heads=2), T.LlamaForCausalLM), 4, {DATA_DEPENDENT}),
    "t5": (lambda T: (T.T5Config(d_model=64, d_ff=128, num_layers=2, num_heads=4, d_kv=16, vocab_size=1000),
                      T.T5ForConditionalGeneration), 4, {LOG}),
}


def _tensors(o):
    if isinstance(o, torch.Tensor):
        return [o]
    if hasattr(o, "to_tuple"):
        o = o.to_tuple()
    if isinstance(o, (tuple, list)):
        return [t for x in o for t in _tensors(x)]
    return []


def _check_model(name):
    """Compiles one model, checks it against eager and returns its explain facts."""
    make, _, _ = MODELS[name]
    config, cls = make(transformers)
    torch.manual_seed(0)
    m = cls(config).eval()
    ids = torch.randint(0, 1000, (2, 12), generator=torch.Generator().manual_seed(1))
    kw = dict(input_ids=ids, decoder_input_ids=ids[:, :5]) if name == "t5" else dict(input_ids=ids, attention_mask=torch.ones_like(ids))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = m(**kw)
        ex = ptgo.explain(copy.deepcopy(m))(**kw)
        f = ptgo.compile(m)
        got = [f(**kw) for _ in range(2)]
    assert type(got[-1]) is type(want) and list(got[-1].keys()) == list(want.keys())
    for g in got:
        gs, ws = _tensors(g), _tensors(want)
        assert len(gs) == len(ws)
        for a, b in zip(gs, ws):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    return {"graphs": ex.graph_count, "reasons": sorted({b.reason for b in ex.break_reasons}),
            "breaks": [str(b) for b in ex.break_reasons]}


@pytest.fixture(scope="module")
def model_results():
    """Every model, checked in a fresh interpreter: once torch.compile has run in a process,
    Dynamo's patched nn.Module.__init__ (its mutation_guard generation tagging writes a
    WeakKeyDictionary) makes every module built inside forward (transformers' caches) a break
    (the suite runs tests/test_torch_compile*.py first)."""
    code = ("import json, sys; sys.path.insert(0, %r); import test_transformers as t; "
            "print(json.dumps({n: t._check_model(n) for n in sorted(t.MODELS)}))" % os.path.dirname(__file__))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(transformers is None, reason="transformers is not installed (make setup installs it into .venv-torch2)")
@pytest.mark.parametrize("name", sorted(MODELS))
def test_model(name, model_results):
    _, max_graphs, reasons = MODELS[name]
    res = model_results[name]
    assert res["graphs"] <= max_graphs, res
    assert set(res["reasons"]) <= reasons, res

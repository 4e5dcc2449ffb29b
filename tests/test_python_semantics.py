"""Python semantics as wide as Dynamo's: each construct captured whole (fullgraph=True) with
eager's results — values, types, dtypes, shapes, and the types of non-tensor results — through
the counting backend (exactly one graph), backend="eager" and the default backend; every case is
called twice and the second call must hit the cache."""
import collections
import collections.abc
import contextlib
import copy
import dataclasses
import enum
import functools
import itertools
import logging
import math
import operator
import typing
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import ptgo
from conftest import assert_same, clone_args

CASES = {}


def case(*make_args):
    """Registers fn with argument makers (each maker is called under a fixed seed)."""

    def deco(fn):
        CASES[fn.__name__] = (fn, make_args)
        return fn

    return deco


def randn(*shape, **kw):
    return lambda: torch.randn(*shape, **kw)


def const(v):
    return lambda: v


# ---- itertools ----------------------------------------------------------------------------------

@case(randn(4, 8))
def it_chain(x):
    return sum(itertools.chain([x], (x * 2,), [x + 1]))


@case(randn(4, 8))
def it_chain_from_iterable(x):
    parts = [[x, x * 2], [], (x * 3,)]
    return list(itertools.chain.from_iterable(parts))[2]


@case(randn(3))
def it_product(x):
    return sum(a * b for a, b in itertools.product([1, 2], [x, x + 1]))


@case(randn(3))
def it_product_repeat(x):
    return [a - b for a, b in itertools.product([x, x * 2], repeat=2)]


@case(randn(3))
def it_combinations(x):
    ts = [x, x + 1, x + 2, x * 3]
    return [a * b for a, b in itertools.combinations(ts, 2)], list(itertools.combinations(range(4), 3))


@case(randn(3))
def it_combinations_with_replacement(x):
    return x * len(list(itertools.combinations_with_replacement("abc", 2))), list(itertools.combinations_with_replacement(range(3), 2))


@case(randn(3))
def it_permutations(x):
    perms = list(itertools.permutations([0, 1, 2]))
    return x * len(perms), perms, list(itertools.permutations("ab", 1))


@case(randn(3))
def it_islice(x):
    ts = [x, x * 2, x * 3, x * 4, x * 5]
    return sum(itertools.islice(ts, 2)), list(itertools.islice(ts, 1, None, 2)), list(itertools.islice(range(10), 2, 8, 3))


@case(randn(3))
def it_islice_consumes_like_python(x):
    it = iter([x, x * 2, x * 3, x * 4, x * 5])
    head = list(itertools.islice(it, 0, 3, 2))
    return head, next(it)  # islice consumed up to its stop (3 items)


@case(randn(3))
def it_accumulate(x):
    return (list(itertools.accumulate([x, x, x])), list(itertools.accumulate([1, 2, 3], operator.mul)),
            list(itertools.accumulate([x, x * 2], initial=x - 1)))


@case(randn(3))
def it_repeat(x):
    return sum(itertools.repeat(x, 3)), list(zip(range(3), itertools.repeat(7)))


@case(randn(3))
def it_count_bounded(x):
    out = [x * i for i, _ in zip(itertools.count(1), range(3))]
    return out, list(itertools.islice(itertools.count(0.5, 0.25), 3))


@case(randn(3))
def it_count_loop_break(x):
    for i in itertools.count():
        x = x + i
        if i >= 3:
            break
    return x


@case(randn(3))
def it_cycle(x):
    return list(itertools.islice(itertools.cycle([x, x * 2]), 5))[4]


@case(randn(3))
def it_zip_longest(x):
    pairs = list(itertools.zip_longest([x, x * 2, x * 3], [1, 2], fillvalue=10))
    return [a * b for a, b in pairs]


@case(randn(3))
def it_starmap(x):
    return list(itertools.starmap(torch.add, [(x, 1), (x, x)]))


@case(randn(3))
def it_takewhile_dropwhile(x):
    sizes = [1, 2, 5, 1]
    return x * sum(itertools.takewhile(lambda s: s < 3, sizes)) + sum(itertools.dropwhile(lambda s: s < 3, sizes))


@case(randn(3))
def it_pairwise_compress_filterfalse(x):
    ts = [x, x + 1, x + 2]
    return ([b - a for a, b in itertools.pairwise(ts)], list(itertools.compress(ts, [1, 0, 1])),
            list(itertools.filterfalse(lambda v: v % 2, range(6))))


@case(randn(3))
def it_groupby(x):
    runs = [(k, len(list(g))) for k, g in itertools.groupby("aabbbcaa")]
    late = [list(g) for _, g in list(itertools.groupby([1, 1, 2]))]  # groups consumed too late are empty
    by_len = [(k, list(g)) for k, g in itertools.groupby(["a", "b", "cc", "d"], key=len)]
    return x * len(runs), runs, late, by_len


# ---- collections --------------------------------------------------------------------------------

@case(randn(3))
def deque_ops(x):
    d = collections.deque([x])
    d.append(x + 1)
    d.appendleft(x - 1)
    d.extendleft([x * 10, x * 20])
    d.rotate(2)
    a = d.popleft() + d.pop()
    return a, len(d), d[0], d[-1]


@case(randn(3))
def deque_maxlen_escapes(x):
    d = collections.deque(maxlen=3)
    for i in range(5):
        d.append(x * i)
    return d


@case(randn(3))
def deque_as_queue(x):
    q = collections.deque([(x, 0)])
    out = []
    while q:
        t, depth = q.popleft()
        out.append(t)
        if depth < 2:
            q.append((t * 2, depth + 1))
            q.append((t + 1, depth + 1))
    return torch.stack(out)


@case(randn(3))
def defaultdict_list(x):
    d = collections.defaultdict(list)
    d["a"].append(x)
    d["a"].append(x * 2)
    d["b"].append(x - 1)
    return d["a"][1] + d["b"][0], sorted(d)


@case(randn(3))
def defaultdict_int_escapes(x):
    d = collections.defaultdict(int)
    for k in ["a", "b", "a", "c", "a"]:
        d[k] += 1
    return x * d["a"], d


@case(randn(3))
def ordereddict_made_inside(x):
    d = collections.OrderedDict()
    d["a"] = x
    d["b"] = x + 1
    d["c"] = x + 2
    d.move_to_end("a")
    k, v = d.popitem(last=False)
    return list(d.values())[-1], k, v, d


@case(randn(3))
def counter_(x):
    c = collections.Counter("abracadabra")
    c.update(["a", "z"])
    return x * c["a"] + c["missing"], c.most_common(2), c


Point = collections.namedtuple("Point", ["x", "y"])
Triple = collections.namedtuple("Triple", "a b c", defaults=[0])


class Box(typing.NamedTuple):
    lo: torch.Tensor
    hi: torch.Tensor

    def size(self):
        return self.hi - self.lo


@case(randn(3))
def namedtuple_outside_class(x):
    p = Point(x, y=x + 1)
    t = Triple(1, 2)
    q = p._replace(y=x * 3)
    return p.x * p.y + q.y, t, t.c, p._asdict()["y"], Point._fields


@case(randn(3))
def namedtuple_escapes(x):
    return Point(x * 2, 3), Box(x, x + 2).size()


@case(randn(3))
def namedtuple_made_inside(x):
    Q = collections.namedtuple("Q", ["u", "v"])
    q = Q(x, 2)
    return q.u * q.v, tuple(q), Q.__name__


@case(lambda: Point(torch.randn(3), torch.randn(3)))
def namedtuple_argument(p):
    a, b = p
    return a * b + p.x


# ---- functools ----------------------------------------------------------------------------------

@case(randn(3))
def partial_call(x):
    add2 = functools.partial(torch.add, alpha=2)
    scale = functools.partial(operator.mul, 3)
    return add2(x, x) + scale(x)


@case(randn(3))
def partial_of_partial_escapes(x):
    p = functools.partial(functools.partial(torch.clamp, min=-0.5), max=0.5)
    return p(x), p


def _mix(a, b, *, w=0.5):
    return a * w + b * (1 - w)


@case(randn(3), const(functools.partial(_mix, w=0.25)))
def partial_argument(x, mix):
    return mix(x, x * 2), mix.keywords["w"]


@case(randn(3))
def reduce_(x):
    return (functools.reduce(operator.add, [x, x, x]), functools.reduce(lambda a, b: a * b, [2, 3, 4], 1),
            functools.reduce(torch.maximum, [x, x - 1, x + 1]))


@functools.lru_cache(maxsize=None)
def _cached_scale(n):
    return n * 2


@case(randn(3))
def lru_cache_helper(x):
    return x * _cached_scale(3)


@case(randn(3))
def wraps_decorator_inside(x):
    def twice(fn):
        @functools.wraps(fn)
        def inner(t):
            return fn(fn(t))

        return inner

    @twice
    def inc(t):
        """add one"""
        return t + 1

    return inc(x), inc.__name__, inc.__doc__, inc.__wrapped__(x)


@case(randn(3), lambda: Config())
def copy_and_deepcopy(x, cfg):
    local = copy.copy(cfg)  # a config object from outside, copied: its attributes, read lazily
    local.hidden = 4
    nested = copy.deepcopy({"dims": [1, 2], "cfg": Config(heads=3)})
    nested["dims"].append(3)
    st = dataclasses.asdict(Config(hidden=2))
    return x * local.hidden + cfg.hidden + len(nested["dims"]) + nested["cfg"].heads + st["hidden"], local, nested


@case(randn(3))
def cmp_to_key_sort(x):
    order = sorted(["bb", "a", "ccc"], key=functools.cmp_to_key(lambda a, b: len(b) - len(a)))
    return x * len(order[0]), order


# ---- sorted / min / max -------------------------------------------------------------------------

@case(randn(4, 8))
def sorted_key_shapes(x):
    ts = [x[:3], x, x[:1]]
    by_rows = sorted(ts, key=lambda t: t.shape[0])
    return by_rows[0], sorted(ts, key=lambda t: -t.shape[0])[0], sorted([3, 1, 2], reverse=True)


@case(randn(4))
def dict_merge_vars_join(x):
    d = {"a": 1, **{"b": 2}}
    e = d | {"c": 3}
    d |= {"z": 0}
    names = ", ".join(f"{s:d}" for s in x.shape)
    return x * sum(e.values()), d, names, vars(Frozen(1.0))


@case(randn(4))
def sorted_key_strings(x):
    d = {"b": x, "a": x + 1, "cc": x + 2}
    keys = sorted(d, key=lambda k: (len(k), k))
    return [d[k] for k in keys], keys


@case(randn(4))
def sorted_stable_reverse(x):
    pairs = [(1, "a"), (0, "b"), (1, "c"), (0, "d")]
    return x * 2, sorted(pairs, key=operator.itemgetter(0), reverse=True)


@case(randn(4))
def list_sort_key(x):
    names = ["conv", "bn", "relu", "fc"]
    names.sort(key=len)
    return x * len(names[0]), names


@case(randn(4))
def min_max_key(x):
    ts = {"small": x[:1], "big": x}
    name = max(ts, key=lambda k: ts[k].numel())
    return ts[name], min([3, 1, 2], key=lambda v: -v), max([], default=7), min(4, 2.5)


@case(randn(4, 8))
def minmax_0dim(x):
    return max(x.sum(), x.mean()) + min(x.sum(), x.mean())


@case(randn(4, 8))
def minmax_0dim_three(x):
    a, b, c = x[0, 0], x[1, 1], x[2, 2]
    return max(a, b, c), min([a, b, c])


@case(lambda: torch.tensor([1.0, float("nan"), -1.0]))
def minmax_0dim_nan(x):
    # A NaN never replaces the best so far; the first item wins ties.
    return max(x[0], x[1]), max(x[1], x[0]), min(x[2], x[1], x[0])


@case(randn(4, 8))
def minmax_ints(x):
    return x[: min(x.shape[0], 3)] * max(x.shape), max(2, 3), min(2.0, 1)


# ---- list mutation ------------------------------------------------------------------------------

@case(randn(3))
def list_clear_pop(x):
    l = [x, x + 1, x + 2]
    y = l.pop(0)
    l[0:1] = [x * 5]
    z = l[0]
    l.clear()
    return y + z + len(l), l


@case(randn(3))
def list_slice_assignment(x):
    l = [1, 2, 3, 4, 5]
    l[1:3] = [x, x * 2, x * 3]
    l[::2] = [10, 20, 30]
    l[-1:] = []
    return l


@case(randn(3))
def list_del(x):
    l = [x, x + 1, x + 2, x + 3, x + 4, x + 5]
    del l[1]
    del l[1:3]
    del l[::2]
    return l, l.pop()


@case(randn(2))
def list_grows_while_iterated(x):
    todo = [x]
    for t in todo:  # a list iterator reads the list as it is at each step
        if len(todo) < 4:
            todo.append(t * 2)
    return todo


@case(randn(2))
def deque_mutated_while_iterated(x):
    d = collections.deque([1, 2])
    try:
        for v in d:
            d.append(v)
    except RuntimeError as e:
        return x * 2, str(e)
    return x


# ---- torch constructors and queries -------------------------------------------------------------

@case(randn(4, 8))
def tensor_of_sizes_and_ranges(x):
    return torch.tensor(x.shape) + torch.tensor(range(2)).sum(), torch.tensor([1.5, 2, x.shape[1]]), torch.tensor(3)


@case(randn(4, 8))
def tensor_of_tensor(x):
    t = x.t()
    return torch.tensor(t), torch.tensor(x, dtype=torch.float64)


@case(randn(4, 8))
def tensor_type_and_new(x):
    return x.type(torch.float64), x.new(2, 3).zero_() + x.new_zeros(2, 3), x.new([1, 2]), x.type(torch.int32).dtype


@case(randn(4, 8))
def finfo_iinfo(x):
    fi = torch.finfo(x.dtype)
    ii = torch.iinfo(torch.int32)
    return (x.clamp(min=fi.min, max=ii.max), fi.eps, fi.tiny, fi.bits, fi.resolution, ii.min, ii.bits,
            torch.finfo(torch.float16).max)


@case(lambda: torch.randn(2, 3, dtype=torch.float64))
def finfo_mask(scores):
    mask = torch.tensor([[True, False, True], [False, False, True]])
    return scores.masked_fill(~mask, torch.finfo(scores.dtype).min).softmax(-1)


@torch.jit.script_if_tracing
def _scripted_if_tracing(x):
    return x * 3


@torch.jit.ignore
def _ignored(x):
    return x + 1


@torch.jit.unused
def _unused(x):
    return x - 1


@case(randn(3))
def jit_helpers(x):
    y = torch.jit.annotate(torch.Tensor, x)
    tracing = torch.jit.is_tracing() or torch._C._is_tracing() or torch._C._get_tracing_state() is not None
    return _scripted_if_tracing(y) + _ignored(y) + _unused(y), tracing, torch.jit.is_scripting()


@case(randn(3, 2))
def as_tensor(x):
    # torchvision's GeneralizedRCNNTransform and AnchorGenerator
    mean = torch.as_tensor([0.5, 1.0, 2.0], dtype=x.dtype, device=x.device)
    same = torch.as_tensor(x)
    return x * mean[:, None], same is x, torch.as_tensor(x, dtype=torch.float64), torch.as_tensor((1, 2)), \
        torch.as_tensor(3.5, device="cpu")


@case(randn(3), randn(4), randn(()))
def meshgrid(a, b, c):
    # torchvision's AnchorGenerator (ij) and RAFT; views with eager's strides
    y, x = torch.meshgrid(a, b, indexing="ij")
    p, q, r = torch.meshgrid([a, b, c], indexing="xy")
    (s,) = torch.meshgrid(c, indexing="xy")
    return y, x * 2, p, q, r + 1, s


@case(randn(3))
def typing_subscripts(x):
    # timm's crossvit, torchvision's detection heads: typing aliases built inside forward
    acc = torch.jit.annotate(typing.List[torch.Tensor], [])
    acc.append(x + 1)
    named = torch.jit.annotate(typing.Dict[str, typing.Optional[torch.Tensor]], {"a": x})
    shape = typing.Tuple[int, ...]
    return acc[0] * 2 + named["a"], shape is typing.Tuple[int, ...], typing.Union[int, str]


def test_typing_subscripts_with_frame_reading_check(monkeypatch):
    """typing_extensions 4.12 and later replace typing._check_generic with a function that reads
    its caller's frame through sys._getframe; a trace that ran typing's __getitem__ reached it
    and broke the graph (every timm/torchvision forward with `List[Tensor]` in a fresh venv)."""
    import sys

    orig = typing._check_generic

    def check_generic(*args, **kwargs):
        sys._getframe(1)
        return orig(*args, **kwargs)

    monkeypatch.setattr(typing, "_check_generic", check_generic)
    for clear in typing._cleanups:
        clear()  # typing's alias cache, so the subscript runs __getitem__ again

    def fn(x):
        acc = torch.jit.annotate(typing.List[typing.Tuple[torch.Tensor, int]], [])
        acc.append((x, 2))
        return acc[0][0] * acc[0][1]

    x = torch.randn(3)
    compiled = ptgo.compile(fn, fullgraph=True)
    assert_same(compiled(x), fn(x))


@case(randn(3))
def log_api_usage(x):
    torch._C._log_api_usage_once("ptgo.test")
    return x + 1


@case(randn(2, 3, 4, 4))
def torchvision_stochastic_depth(x):
    from torchvision.ops import stochastic_depth

    return stochastic_depth(x, 0.5, "row", training=False) + 1


# ---- objects made inside the frame --------------------------------------------------------------

class Scaler:
    factor = 2.0

    def __init__(self, bias, *, power=1):
        self.bias = bias
        self.power = power

    @property
    def doubled(self):
        return self.bias * 2

    def __call__(self, x):
        return (x * self.factor + self.bias) ** self.power

    def __len__(self):
        return 3


@case(randn(3))
def user_object(x):
    s = Scaler(x + 1, power=2)
    s.extra = len(s)
    return s(x) + s.doubled + s.extra, bool(s), isinstance(s, Scaler), type(s).__name__


@case(randn(3))
def user_object_escapes(x):
    s = Scaler(x * 3)
    s.me = s
    return s, [s.bias, s]


@dataclasses.dataclass
class Stats:
    mean: torch.Tensor
    std: torch.Tensor
    n: int = 1
    tags: list = dataclasses.field(default_factory=list)

    def normalize(self, x):
        return (x - self.mean) / self.std


@dataclasses.dataclass(frozen=True)
class Frozen:
    scale: float
    shift: float = 0.0


@case(randn(4, 3))
def dataclass_inside(x):
    st = Stats(x.mean(0), x.std(0), n=x.shape[0])
    st.tags.append("a")
    fz = Frozen(2.0)
    return st.normalize(x) * fz.scale + fz.shift, st, st == st, dataclasses.replace(fz, shift=1.0).shift


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a):
        self.a = a
        self.b = a * 2


@case(randn(3))
def slotted_object(x):
    s = Slotted(x)
    s.a = s.a + s.b
    return s.a


class Lazy:
    def __init__(self, x):
        self._x = x

    def __getattr__(self, name):
        if name == "twice":
            return self._x * 2
        raise AttributeError(name)


@case(randn(3))
def object_getattr(x):
    return Lazy(x).twice


class Output(collections.OrderedDict):
    """A transformers ModelOutput in miniature: dataclass fields that are also dict items."""

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is not None:
                self[f.name] = v

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        super().__setattr__(key, value)

    def __setattr__(self, name, value):
        if name in self.keys() and value is not None:
            super().__setitem__(name, value)
        super().__setattr__(name, value)

    def __getitem__(self, k):
        if isinstance(k, str):
            return dict(self.items())[k]
        return self.to_tuple()[k]

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


@dataclasses.dataclass
class BlockOutput(Output):
    hidden: torch.Tensor = None
    attn: typing.Optional[torch.Tensor] = None
    aux: typing.Optional[torch.Tensor] = None


@case(randn(2, 4))
def model_output_like(x):
    out = BlockOutput(hidden=x * 2, attn=x.softmax(-1))
    h = out.hidden + out["attn"] + out[0]
    return h, out.to_tuple(), len(out), "aux" in out, out


@case(randn(2, 4))
def distribution_normal_no_validation(x):
    d = torch.distributions.Normal(x, 1.0, validate_args=False)
    return d.log_prob(x * 2), d.mean, d.stddev, d.variance, d.batch_shape


@case(randn(2, 4), lambda: torch.rand(2, 4) + 0.5)
def distribution_normal_validated(x, scale):
    # Validation branches on tensor values (`if not valid.all(): raise`): the graph computes the
    # checks, the transformed code checks them and runs the frame eagerly when one fails.
    d = torch.distributions.Normal(x, scale)
    return d.log_prob(x + 1), d.entropy(), d.cdf(x), d.icdf(torch.full_like(x, 0.25))


@case(lambda: torch.rand(3, 5))
def distributions_others(p):
    b = torch.distributions.Bernoulli(probs=p)
    u = torch.distributions.Uniform(torch.zeros(5), torch.ones(5) * 2)
    lap = torch.distributions.Laplace(p, 1.0)
    return b.log_prob((p > 0.5).float()), b.entropy(), u.log_prob(p), lap.log_prob(p)


# Compiled from source: pytest rewrites assert statements in test modules.
exec(compile("""
def tensor_asserts(x):
    y = x.abs() + 1
    assert (y > 0).all(), "positive"
    torch._assert((y < 1e6).all(), "bounded")
    if not torch.isfinite(y).all():
        raise ValueError("not finite")
    return y.log()
""", __file__ + ":tensor_asserts", "exec"))
case(randn(4))(tensor_asserts)  # noqa: F821


# ---- exceptions raised and caught inside the frame -----------------------------------------------

def _is_torchdynamo_compiling():
    # transformers' helper: on torch 1.13 the import fails and the except clause answers.
    try:
        import torch._dynamo as dynamo  # noqa: F401

        return dynamo.is_compiling()
    except Exception:
        return False


@case(randn(3))
def try_except_inside(x):
    d = {"a": 1}
    try:
        v = d["b"]
    except KeyError as e:
        v = len(e.args)
    try:
        y = [1, 2][5]
    except (IndexError, TypeError):
        y = -1
    it = iter([1])
    next(it)
    try:
        next(it)
    except StopIteration:
        z = 10
    try:
        raise ValueError("boom")
    except ValueError as e:
        msg, caught = str(e), e
    finally:
        w = 3
    return x * v + y + z + w + _is_torchdynamo_compiling(), msg, caught, type(caught).__name__


@case(randn(3, requires_grad=True))
def exception_leaves_with_block(x):
    try:
        with torch.no_grad():
            y = x * 2
            raise KeyError("k")
    except KeyError:
        pass
    return y, x * 3, torch.is_grad_enabled()


@case(randn(3))
def hasattr_through_getattr(x):
    o = Lazy(x)
    return x + hasattr(o, "twice") + hasattr(o, "thrice") * 10 + getattr(o, "other", 100)


# ---- strings over tensor metadata ---------------------------------------------------------------

@case(randn(4, 8))
def fstring_format_percent(x):
    a = f"{x.dtype}-{x.shape[0]}-{x.device}-{tuple(x.shape)}"
    b = "%s/%d/%r" % (x.dtype, x.dim(), x.shape)
    c = "{}:{:>3}".format(x.device, x.shape[1])
    return x * 2 if a == "torch.float32-4-cpu-(4, 8)" else x, a, b, c


# ---- grad-mode decorators -----------------------------------------------------------------------

@case(randn(3, requires_grad=True))
def no_grad_decorator_inside(x):
    @torch.no_grad()
    def g(y):
        return y * 2

    @torch.enable_grad()
    def h(y):
        return y * 3

    with torch.no_grad():
        inner = h(x)
    return g(x) + 1, inner, torch.is_grad_enabled()


@torch.no_grad()
def _outside_no_grad(x):
    return x * 2


@case(randn(3, requires_grad=True))
def no_grad_decorator_outside(x):
    return _outside_no_grad(x) + x


# ---- nn modules made inside forward -------------------------------------------------------------

@case(randn(2, 5))
def modules_made_inside(x):
    y = nn.Softmax(dim=-1)(x) + nn.ReLU()(x) + nn.Identity(54, unused=1)(x)
    seq = nn.Sequential(nn.GELU(), nn.Tanh())
    return y + seq(x), len(seq), nn.Flatten(0)(x)


class Gate(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim
        self.act = nn.Sigmoid()

    def forward(self, x):
        a, b = x.chunk(2, self.dim)
        return a * self.act(b)


@case(randn(2, 6))
def user_module_made_inside(x):
    g = Gate(-1)
    return g(x), g.training, hasattr(g, "act"), isinstance(g.act, nn.Module)


@case(randn(2, 6))
def module_made_inside_escapes(x):
    g = Gate(-1)
    return g(x), g


class Scaled(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim
        self.act = nn.Sigmoid()
        self.register_buffer("scale", torch.full((1,), 2.0))

    def forward(self, x):
        return x * self.act(x) * self.scale


@case(randn(2, 3))
def module_tree_made_inside(x):
    seq = nn.Sequential(*[Scaled(-1) for _ in range(2)])
    return seq(x), seq


# ---- indexing -----------------------------------------------------------------------------------

@case(randn(4, 3))
def bool_list_indexing(x):
    return x[[True, False, True, False]], x[:, [False, True, True]], x[[True, False, True, False], [0, 2]]


# ---- idioms from torchvision, timm and transformers ---------------------------------------------

@dataclasses.dataclass
class Config:
    hidden: int = 8
    heads: int = 2
    layer_norm_eps: float = 1e-5
    act: str = "gelu"
    use_cache: bool = False


ACTS = {"gelu": F.gelu, "relu": F.relu}


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.qkv = nn.Linear(cfg.hidden, 3 * cfg.hidden)
        self.layers = nn.ModuleList([nn.LayerNorm(cfg.hidden) for _ in range(2)])

    def forward(self, x, mask=None, **kwargs):
        cfg = self.cfg
        b, t, _ = x.shape
        q, k, v = self.qkv(x).split(cfg.hidden, dim=-1)
        shape = (b, t, cfg.heads, cfg.hidden // cfg.heads)
        q, k, v = (u.view(*shape).transpose(1, 2) for u in (q, k, v))
        w = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if mask is not None:
            w = w.masked_fill(~mask, torch.finfo(w.dtype).min)
        y = (w.softmax(-1) @ v).transpose(1, 2).reshape(b, t, cfg.hidden)
        for i, ln in enumerate(self.layers):
            y = ln(y) if i % 2 == 0 else y + ln(y)
        act = ACTS.get(getattr(cfg, "act", "relu"), F.relu)
        use_cache = kwargs.get("use_cache", cfg.use_cache)
        outs = (act(y),) + ((k, v) if use_cache else ())
        hidden, *rest = outs
        assert isinstance(hidden, (torch.Tensor, tuple))
        return BlockOutput(hidden=hidden, attn=w if hasattr(self, "qkv") else None)


_ATTN = Attention(Config())


@case(lambda: _ATTN, randn(2, 3, 8), lambda: torch.tensor([[True, True, False]] * 3))
def hf_style_attention(m, x, mask):
    with torch.no_grad():
        out = m(x, mask=mask, use_cache=True)
    return out.to_tuple(), tuple(zip(*[(1, "a"), (2, "b")]))


_log = logging.getLogger("python_semantics_tests")


@case(randn(2, 4))
def context_managers_and_logging(x):
    _log.debug("shape %s", x.shape)  # below the logger's level: nothing happens (guarded)
    _log.info("ignored")
    with contextlib.nullcontext(x * 2) as y, torch.autocast("cpu", enabled=False):
        z = y + 1
    with torch.cpu.amp.autocast(enabled=False):
        w = z.softmax(-1)
    return w


def _ntuple(n):
    def parse(x):
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(itertools.repeat(x, n))

    return parse


class Fmt(str, enum.Enum):
    NCHW = "NCHW"
    NHWC = "NHWC"


def _same_pad(x, k, s):
    ih, iw = x.size()[-2:]
    ph = max((math.ceil(ih / s[0]) - 1) * s[0] + k[0] - ih, 0)
    pw = max((math.ceil(iw / s[1]) - 1) * s[1] + k[1] - iw, 0)
    return F.pad(x, (pw // 2, pw - pw // 2, ph // 2, ph - ph // 2))


class TimmBlock(nn.Module):
    def __init__(self, dim, fmt="NHWC"):
        super().__init__()
        self.fmt = Fmt(fmt)
        self.k, self.s = _ntuple(2)(3), _ntuple(2)([2, 2])
        self.conv = nn.Conv2d(dim, dim, self.k, self.s)
        self.norm = nn.LayerNorm(dim)
        self.act = functools.partial(F.gelu, approximate="tanh")
        self.grad_checkpointing = False

    def forward(self, x):
        x = self.conv(_same_pad(x, self.k, self.s))
        if self.grad_checkpointing and not torch.jit.is_scripting():
            raise RuntimeError("not here")
        if self.fmt == Fmt.NHWC:
            x = x.permute(0, 2, 3, 1)
        return self.act(self.norm(x)), self.fmt, tuple(x.shape)


_TIMM = TimmBlock(4).eval()


@case(lambda: _TIMM, randn(2, 4, 9, 9))
def timm_style_block(m, x):
    return m(x)


# A Llama-style decoder as transformers writes it: a config whose __getattribute__ maps names,
# an activation table that instantiates modules, rotary embeddings under no_grad with autocast
# disabled, repeat_kv, a causal mask from torch.finfo(dtype).min, **kwargs forwarding, optional
# outputs accumulated in tuples, and a ModelOutput-like result (or a tuple).
class ClassInstantier(collections.OrderedDict):
    def __getitem__(self, key):
        content = super().__getitem__(key)
        cls, kwargs = content if isinstance(content, tuple) else (content, {})
        return cls(**kwargs)

class NewGELU(nn.Module):
    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))

ACT2CLS = {"gelu_new": NewGELU, "silu": nn.SiLU, "gelu": (nn.GELU, {"approximate": "tanh"})}
ACT2FN = ClassInstantier(ACT2CLS)

class LlamaConfig:
    hidden_size = 16; num_attention_heads = 4; num_key_value_heads = 2; intermediate_size = 32
    num_hidden_layers = 2; rms_norm_eps = 1e-6; vocab_size = 50; hidden_act = "silu"
    output_attentions = False; output_hidden_states = False; use_return_dict = True
    attribute_map = {"n_head": "num_attention_heads"}
    def __getattribute__(self, key):
        if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        return super().__getattribute__(key)

@dataclasses.dataclass
class LlamaOutput(Output):
    last_hidden_state: torch.Tensor = None
    hidden_states: typing.Optional[typing.Tuple[torch.Tensor, ...]] = None
    attentions: typing.Optional[typing.Tuple[torch.Tensor, ...]] = None

class LlamaRMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__(); self.weight = nn.Parameter(torch.ones(n)); self.variance_epsilon = eps
    def forward(self, h):
        dt = h.dtype
        h = h.to(torch.float32)
        var = h.pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(var + self.variance_epsilon)
        return self.weight * h.to(dt)

class LlamaRotary(nn.Module):
    def __init__(self, dim, base=10000):
        super().__init__()
        inv = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv, persistent=False)
    @torch.no_grad()
    def forward(self, x, position_ids):
        inv = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        pos = position_ids[:, None, :].float()
        device_type = x.device.type
        device_type = device_type if isinstance(device_type, str) else "cpu"
        with torch.autocast(device_type=device_type, enabled=False):
            freqs = (inv.float() @ pos.float()).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos(), emb.sin()
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)

def rotate_half(x):
    return torch.cat((-x[..., x.shape[-1] // 2:], x[..., : x.shape[-1] // 2]), dim=-1)

def repeat_kv(h, n_rep):
    b, kvh, s, d = h.shape
    if n_rep == 1:
        return h
    return h[:, :, None, :, :].expand(b, kvh, n_rep, s, d).reshape(b, kvh * n_rep, s, d)

class LlamaAttention(nn.Module):
    def __init__(self, cfg, layer_idx=None):
        super().__init__()
        self.config = cfg; self.layer_idx = layer_idx
        self.num_heads = cfg.n_head; self.head_dim = cfg.hidden_size // self.num_heads
        self.kvh = cfg.num_key_value_heads; self.groups = self.num_heads // self.kvh
        self.q_proj = nn.Linear(cfg.hidden_size, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(cfg.hidden_size, self.kvh * self.head_dim, bias=False)
        self.v_proj = nn.Linear(cfg.hidden_size, self.kvh * self.head_dim, bias=False)
        self.o_proj = nn.Linear(cfg.hidden_size, cfg.hidden_size, bias=False)
        self.rotary_emb = LlamaRotary(self.head_dim)
    def forward(self, hidden_states, attention_mask=None, position_ids=None, output_attentions=False, **kwargs):
        if "padding_mask" in kwargs:
            warnings.warn("Passing `padding_mask` is deprecated")
        bsz, q_len, _ = hidden_states.size()
        q = self.q_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(hidden_states).view(bsz, q_len, self.kvh, self.head_dim).transpose(1, 2)
        v = self.v_proj(hidden_states).view(bsz, q_len, self.kvh, self.head_dim).transpose(1, 2)
        past_key_value = getattr(self, "past_key_value", None)
        cos, sin = self.rotary_emb(v, position_ids)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q, k = (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)
        k, v = repeat_kv(k, self.groups), repeat_kv(v, self.groups)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        if attention_mask is not None:
            w = w + attention_mask[:, :, :, : k.shape[-2]]
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        w = F.dropout(w, p=0.0, training=self.training)
        out = torch.matmul(w, v)
        if out.size() != (bsz, self.num_heads, q_len, self.head_dim):
            raise ValueError(f"`attn_output` should be of size {(bsz, self.num_heads, q_len, self.head_dim)}, but is {out.size()}")
        out = self.o_proj(out.transpose(1, 2).contiguous().reshape(bsz, q_len, -1))
        return out, (w if output_attentions else None), past_key_value

class LlamaMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.gate = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)
        self.act_fn = ACT2FN[cfg.hidden_act]
    def forward(self, x):
        return self.down(self.act_fn(self.gate(x)) * self.up(x))

class LlamaLayer(nn.Module):
    def __init__(self, cfg, i):
        super().__init__()
        self.self_attn = LlamaAttention(cfg, i); self.mlp = LlamaMLP(cfg)
        self.input_layernorm = LlamaRMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
    def forward(self, hidden_states, attention_mask=None, position_ids=None, output_attentions=False, **kwargs):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, attn, _ = self.self_attn(hidden_states=hidden_states, attention_mask=attention_mask,
                                                position_ids=position_ids, output_attentions=output_attentions, **kwargs)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = residual + self.mlp(self.post_attention_layernorm(hidden_states))
        outputs = (hidden_states,)
        if output_attentions:
            outputs += (attn,)
        return outputs

class LlamaModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.config = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList([LlamaLayer(cfg, i) for i in range(cfg.num_hidden_layers)])
        self.norm = LlamaRMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.gradient_checkpointing = False
    def _causal_mask(self, attention_mask, input_tensor):
        dtype, device = input_tensor.dtype, input_tensor.device
        min_dtype = torch.finfo(dtype).min
        seq = input_tensor.shape[1]
        causal_mask = torch.full((seq, seq), fill_value=min_dtype, dtype=dtype, device=device)
        if seq != 1:
            causal_mask = torch.triu(causal_mask, diagonal=1)
        causal_mask = causal_mask[None, None, :, :].expand(input_tensor.shape[0], 1, -1, -1)
        if attention_mask is not None:
            causal_mask = causal_mask.clone()
            mask_length = attention_mask.shape[-1]
            padding_mask = causal_mask[..., :mask_length].eq(0.0) * attention_mask[:, None, None, :].eq(0.0)
            causal_mask[..., :mask_length] = causal_mask[..., :mask_length].masked_fill(padding_mask, min_dtype)
        return causal_mask
    def forward(self, input_ids=None, attention_mask=None, position_ids=None, output_attentions=None,
                output_hidden_states=None, return_dict=None, **kwargs):
        output_attentions = output_attentions if output_attentions is not None else self.config.output_attentions
        output_hidden_states = output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict
        if (input_ids is None) ^ (kwargs.get("inputs_embeds") is not None):
            raise ValueError("You must specify exactly one of input_ids or inputs_embeds")
        if self.gradient_checkpointing and self.training:
            warnings.warn("`use_cache=True` is incompatible with gradient checkpointing.")
        inputs_embeds = self.embed_tokens(input_ids)
        if position_ids is None:
            position_ids = torch.arange(0, inputs_embeds.shape[1], device=inputs_embeds.device).unsqueeze(0)
        causal_mask = self._causal_mask(attention_mask, inputs_embeds)
        hidden_states = inputs_embeds
        all_hidden_states = () if output_hidden_states else None
        all_self_attns = () if output_attentions else None
        for decoder_layer in self.layers:
            if output_hidden_states:
                all_hidden_states += (hidden_states,)
            layer_outputs = decoder_layer(hidden_states, attention_mask=causal_mask, position_ids=position_ids,
                                          output_attentions=output_attentions)
            hidden_states = layer_outputs[0]
            if output_attentions:
                all_self_attns += (layer_outputs[1],)
        hidden_states = self.norm(hidden_states)
        if output_hidden_states:
            all_hidden_states += (hidden_states,)
        if not return_dict:
            return tuple(v for v in [hidden_states, all_hidden_states, all_self_attns] if v is not None)
        return LlamaOutput(last_hidden_state=hidden_states, hidden_states=all_hidden_states, attentions=all_self_attns)


torch.manual_seed(0)
_LLAMA = LlamaModel(LlamaConfig()).eval()


def _llama_mask():
    am = torch.ones(2, 6, dtype=torch.long)
    am[1, :2] = 0
    return am


@case(lambda: _LLAMA, lambda: torch.randint(0, 50, (2, 6)), _llama_mask)
def hf_llama(m, ids, mask):
    with torch.no_grad():
        plain = m(ids)
        full = m(ids, attention_mask=mask, output_attentions=True, output_hidden_states=True)
        tup = m(ids, return_dict=False)
    return plain, full, tup


# ---- the harness --------------------------------------------------------------------------------

def _args(name, seed):
    torch.manual_seed(seed)
    return [mk() for mk in CASES[name][1]]


def _compile_count(log):
    return sum(1 for m in log if m.startswith("GUARDS for"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_counting_backend(name, counter):
    fn = CASES[name][0]
    compiled = ptgo.compile(fn, fullgraph=True, backend=counter)
    for seed in (0, 1):
        args = _args(name, seed)
        expected = fn(*clone_args(args))
        assert_same(compiled(*clone_args(args)), expected)
        assert counter.frame_count == 1, "call %d compiled %d graphs" % (seed + 1, counter.frame_count)
    assert counter.calls == 2


@pytest.mark.parametrize("backend", ["eager", "inductor"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_backends(name, backend, ptgo_log):
    fn = CASES[name][0]
    ptgo.set_logs("guards")
    compiled = ptgo.compile(fn, fullgraph=True, backend=backend)
    for seed in (0, 1):
        args = _args(name, seed)
        expected = fn(*clone_args(args))
        assert_same(compiled(*clone_args(args)), expected)
        assert _compile_count(ptgo_log) == 1, ptgo_log.text


# ---- where eager raises, the compiled function raises eager's exception --------------------------

def _raises_exhausted(x):
    it = iter([x])
    next(it)
    return next(it)


def _raises_missing_key(x):
    d = collections.OrderedDict(a=x)
    return d["b"]


def _raises_empty_pop(x):
    d = collections.deque()
    return d.pop() + x


def _raises_list_pop(x):
    l = [x]
    l.pop(3)
    return x


def _raises_dict_resized(x):
    d = {"a": x}
    for k in d:
        d[k + "!"] = x
    return x


def _raises_validation(x):
    return torch.distributions.Normal(x, -1.0).log_prob(x)


@pytest.mark.parametrize("fn, exc", [(_raises_exhausted, StopIteration), (_raises_missing_key, KeyError),
                                     (_raises_empty_pop, IndexError), (_raises_list_pop, IndexError),
                                     (_raises_dict_resized, RuntimeError), (_raises_validation, ValueError)])
def test_eager_exceptions(fn, exc):
    x = torch.randn(3)
    with pytest.raises(exc):
        fn(x)
    with pytest.raises(exc):
        ptgo.compile(fn, backend="eager")(x)
    # With fullgraph=True too the user gets eager's exception (a user error, A43; validation is a
    # checked assumption: the graph runs, the check fails, eager raises).
    with pytest.raises(exc) as got:
        ptgo.compile(fn, fullgraph=True, backend="eager")(x)
    assert not isinstance(got.value, ptgo.Unsupported)
    if exc is ValueError:
        assert "Expected parameter scale" in str(got.value)


def test_failed_check_runs_the_frame_eagerly_once(counter):
    def f(x, box):
        box.append(x.shape[0])  # a side effect before the check: it happens once, never twice
        if not (x > 0).all():
            raise ValueError("negative")
        return x.sqrt()

    cf = ptgo.compile(f, fullgraph=True, backend=counter)
    ok, bad = [], []
    assert_same(cf(torch.ones(3), ok), torch.ones(3))
    with pytest.raises(ValueError, match="negative"):
        cf(-torch.ones(3), bad)
    assert ok == [3] and bad == [3]
    assert counter.frame_count == 1 and counter.calls == 2


@pytest.mark.parametrize("hazard", ["random", "input_write"])
def test_checks_refused_when_a_rerun_differs(hazard):
    def f(x):
        y = torch.rand_like(x) if hazard == "random" else x.mul_(2)
        if not (y < 10).all():
            raise ValueError("big")
        return y + 1

    with pytest.raises(ptgo.Unsupported, match="run again eagerly"):
        ptgo.compile(f, fullgraph=True, backend="eager")(torch.ones(3))
    x = torch.ones(3)
    torch.manual_seed(0)
    expected = f(x.clone())
    torch.manual_seed(0)
    assert_same(ptgo.compile(f, backend="eager")(x.clone()), expected)


def test_check_after_inplace_write_to_intermediate(counter):
    def f(x):
        y = x * 2
        y.clamp_(max=5)
        if not (y <= 5).all():
            raise ValueError("clamp failed")
        return y

    x = torch.randn(4) * 10
    assert_same(ptgo.compile(f, fullgraph=True, backend=counter)(x), f(x))
    assert counter.frame_count == 1


# ---- what still falls back says why ---------------------------------------------------------------

def test_module_with_parameters_made_inside(counter):
    def f(x):
        return nn.Linear(3, 2)(x)

    with pytest.raises(ptgo.Unsupported, match="nn.Parameter"):
        ptgo.compile(f, fullgraph=True, backend=counter)(torch.randn(2, 3))
    torch.manual_seed(0)
    expected = f(torch.ones(2, 3))
    torch.manual_seed(0)
    assert_same(ptgo.compile(f, backend=counter)(torch.ones(2, 3)), expected)


def test_dropout_module_made_inside_trains():
    def f(x):
        return nn.Dropout(0.5)(x)  # a new module is in training mode, whatever the caller's is

    x = torch.ones(64)
    torch.manual_seed(0)
    expected = f(x)
    torch.manual_seed(0)
    assert_same(ptgo.compile(f, fullgraph=True, backend="eager")(x), expected)


# ---- guards: what the trace read from outside is checked on every call ---------------------------

def test_class_attribute_change_recompiles(counter):
    def f(x):
        return Scaler(1.0)(x)

    cf = ptgo.compile(f, fullgraph=True, backend=counter)
    x = torch.randn(3)
    assert_same(cf(x), f(x))
    old = Scaler.factor
    try:
        Scaler.factor = 5.0
        assert_same(cf(x), f(x))
    finally:
        Scaler.factor = old
    assert counter.frame_count == 2


def test_partial_argument_recompiles_for_another_partial(counter):
    cf = ptgo.compile(partial_argument, fullgraph=True, backend=counter)
    x = torch.randn(3)
    for w in (0.25, 0.75, 0.25):
        p = functools.partial(_mix, w=w)
        assert_same(cf(x, p), partial_argument(x, p))
    assert counter.frame_count == 3  # a partial is guarded by identity: each new one recompiles


def test_validation_default_change_recompiles(counter):
    cf = ptgo.compile(_raises_validation, fullgraph=True, backend=counter)
    x = torch.randn(3)
    torch.distributions.Distribution.set_default_validate_args(False)
    try:
        assert_same(cf(x), _raises_validation(x))  # scale -1: no validation, NaN log-probs
    finally:
        torch.distributions.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        cf(x)
    assert counter.frame_count == 2


def test_namedtuple_argument_shapes_recompile(counter):
    cf = ptgo.compile(namedtuple_argument, fullgraph=True, backend=counter, dynamic=False)
    for n in (3, 3, 5):
        p = Point(torch.randn(n), torch.randn(n))
        assert_same(cf(p), namedtuple_argument(p))
    assert counter.frame_count == 2


def test_sorted_keys_follow_dict_argument(counter):
    def f(x, d):
        return [d[k] * x for k in sorted(d, key=lambda k: d[k])]

    cf = ptgo.compile(f, fullgraph=True, backend=counter)
    x = torch.randn(2)
    for d in ({"a": 2, "b": 1}, {"a": 1, "b": 2}):
        assert_same(cf(x, d), f(x, d))
    assert counter.frame_count == 2


def test_init_frames_of_eager_code_under_fullgraph():
    # make() does no tensor work, so it runs eagerly and the hook sees the __init__ frames of
    # the modules it builds: Module.__init__ and Module.__setattr__ run there on live objects
    # (their attributes modelled as the instance __dict__, written back after the frame).
    def make(n):
        layers = []
        for _ in range(n):
            layers.append(Gate(-1))
        return nn.Sequential(*layers)

    m = ptgo.compile(make, fullgraph=True, backend="eager")(2)
    ref = make(2)
    assert [type(c) for c in m.modules()] == [type(c) for c in ref.modules()]
    assert m[1].dim == -1 and list(m[1]._modules) == ["act"] and m[1].training
    x = torch.randn(2, 6)
    assert_same(m(x), ref(x))


def test_deque_argument_mutated(counter):
    def f(x, q):
        q.append(x * 2)
        first = q.popleft()
        return first + q[-1], len(q)

    cf = ptgo.compile(f, fullgraph=True, backend=counter)
    for n in (2, 2, 3):
        x = torch.randn(3)
        q1 = collections.deque([torch.ones(3) * i for i in range(n)], maxlen=5)
        q2 = collections.deque(list(q1), maxlen=5)
        assert_same(cf(x, q1), f(x, q2))
        assert_same(q1, q2)  # the mutations were replayed on the caller's deque
    assert counter.frame_count == 2  # the length is guarded


def test_made_in_frame_values_cross_a_graph_break(counter):
    def f(x):
        s = Scaler(x + 1, power=2)
        d = collections.deque([x * 2], maxlen=3)
        p = functools.partial(torch.add, alpha=3)
        dd = collections.defaultdict(list)
        dd["a"].append(x)
        print("graph break")
        d.append(s(x))
        return p(d[0], d[-1]), s.bias, dd, Point(x, 1)

    x = torch.randn(2)
    assert_same(ptgo.compile(f, backend=counter)(x), f(x))
    assert counter.frame_count == 2  # before the print and in the resume function


def test_defaultdict_and_counter_arguments(counter):
    def f(x, groups, seen):
        groups["new"].append(x * 2)  # the factory runs; the caller's dict gets the key
        seen["x"] += 1
        return sum(groups["old"]) + groups["new"][0] * seen["x"]

    cf = ptgo.compile(f, fullgraph=True, backend=counter)
    x = torch.randn(3)
    g1, g2 = collections.defaultdict(list, old=[x]), collections.defaultdict(list, old=[x])
    c1, c2 = collections.Counter(x=2), collections.Counter(x=2)
    assert_same(cf(x, g1, c1), f(x, g2, c2))
    assert_same(g1, g2)
    assert_same(c1, c2)
    assert counter.frame_count == 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_a_negative_constant_base_keeps_its_sign(backend):
    # torch.fx writes operator.pow inline, and Python reads `-2 ** x` as `-(2 ** x)` (fuzz seed
    # 39054: eager and aot_eager gave -1 for (-2**40) ** 0)
    def f(x, n):
        s = n.sum().item()  # a graph break: s is the resumed graph's constant
        return s ** x, -2.5 ** x, (-3) ** x, x.double() ** -2

    x, n = torch.tensor([0, 1, 2, 3]), torch.tensor([-7, 2])
    assert_same(ptgo.compile(f, backend=backend)(x, n), f(x, n))

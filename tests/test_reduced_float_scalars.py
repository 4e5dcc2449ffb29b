"""A Python number beside a float16/bfloat16 tensor, as eager's kernels read it.

torch 1.13 rounds the number to the tensor's dtype before its float32 computation for every
binary op (TensorIterator wraps it in a 0-d tensor of the common dtype); torch 2.x does so for
all but mul and true division, which compute with the number in float32
(primtorch.torchBehavior.ReducedFloatMulDivOpmath). Either way ptgo's results equal eager's
bit for bit.
"""

import pytest
import torch

import ptgo

OPS = {
    "add": lambda x, a: x + a,
    "sub": lambda x, a: x - a,
    "rsub": lambda x, a: a - x,
    "mul": lambda x, a: x * a,
    "div": lambda x, a: x / a,
    "rdiv": lambda x, a: a / x,
    "floor_div": lambda x, a: torch.div(x, a, rounding_mode="floor"),
    "trunc_div": lambda x, a: torch.div(x, a, rounding_mode="trunc"),
    "floor_divide": lambda x, a: torch.floor_divide(x, a),
    "floordiv_op": lambda x, a: x // a,
    "remainder": lambda x, a: torch.remainder(x, a),
    "fmod": lambda x, a: torch.fmod(x, a),
    "mul_": lambda x, a: x.clone().mul_(a),
    "add_": lambda x, a: x.clone().add_(a),
    "add_int": lambda x, a: x + 257,
}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("name", sorted(OPS))
def test_number_beside_a_reduced_float_tensor(name, dtype):
    fn = OPS[name]
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(3000, generator=g) * 10).to(dtype).abs() + 0.01
    x[::3] = torch.tensor(0.1, dtype=dtype)
    cf = ptgo.compile(fn)
    for a in [0.1, 0.7, -3.3, 1 / 3, 0.3]:
        want = fn(x, a)
        got = cf(x, a)
        assert got.dtype == want.dtype
        assert torch.equal(got.isnan(), want.isnan()), "a=%r" % a
        assert torch.equal(got.nan_to_num(), want.nan_to_num()), "a=%r" % a


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_alpha_beside_a_bfloat16_tensor(dtype):
    if dtype == torch.float16 and torch.__version__.startswith("1."):
        pytest.xfail("torch 1.13's float16 add(alpha=) rounds alpha * other to float16 before the sum")
    fn = lambda x, y, a: torch.add(x, y, alpha=a)  # noqa: E731
    g = torch.Generator().manual_seed(1)
    # a multiple of the vector width: eager's scalar tail loop rounds alpha * other to the
    # dtype before the sum, its vector loop does not (eager disagrees with itself there)
    x = (torch.randn(4096, generator=g) * 10).to(dtype)
    y = (torch.randn(4096, generator=g) * 10).to(dtype)
    cf = ptgo.compile(fn)
    for a in [0.1, 0.7, -3.3]:
        assert torch.equal(cf(x, y, a), fn(x, y, a)), "a=%r" % a


ROUNDING = {
    "floor": lambda x, y: torch.div(x, y, rounding_mode="floor"),
    "trunc": lambda x, y: torch.div(x, y, rounding_mode="trunc"),
    "floor_divide": torch.floor_divide,
    "floordiv_op": lambda x, y: x // y,
}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("name", sorted(ROUNDING))
def test_rounding_division_of_reduced_float_tensors(name, dtype):
    """Floor and trunc division of two float16/bfloat16 tensors, bit for bit: torch's kernel
    rounds every step of c10::div_floor_floating (and trunc's quotient) to the dtype; the float32
    quotient floored or truncated once differed in 1-7% of random pairs. 4096 elements: a
    multiple of the vector width (torch 1.13's float16 scalar tail loop computes in float32)."""
    fn = ROUNDING[name]
    g = torch.Generator().manual_seed(2)
    x = (torch.randn(4096, generator=g) * 100).to(dtype)
    y = torch.randn(4096, generator=g).to(dtype)
    y[::97] = 0
    y[1::97] = -0.0
    cf = ptgo.compile(lambda x, y: fn(x, y) * 1)
    want, got = fn(x, y), cf(x, y)
    assert torch.equal(got.isnan(), want.isnan())
    assert torch.equal(got.nan_to_num(), want.nan_to_num())
    assert torch.equal(got.signbit(), want.signbit())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", ["add", "sub", "rsub", "mul", "div", "rdiv", "floor_div", "remainder"])
def test_tensor_of_another_dtype_beside_a_reduced_float_tensor(name, dtype):
    """Fuzz seed 23671: an int64 0-d tensor (a sum of indices, 2e7) times a float16 tensor is
    cast to float16 first (inf) as TensorIterator casts its inputs; an int32 tensor too (2049
    is 2048 in float16); only 2.14's mul and div read a 0-d second operand unrounded."""
    f = OPS[name]
    x = torch.tensor([1e-4, -3e-4, 2.0, 0.5, -7.0], dtype=dtype)
    others = [torch.tensor(20000000), torch.tensor([3001, 5, 2049, 1, -2], dtype=torch.int32),
              torch.tensor(1e-8), torch.tensor(3.1e-5, dtype=torch.float64)]
    for a in others:
        ptgo.reset()
        want = f(x, a)
        got = ptgo.compile(f)(x, a)
        assert got.dtype == want.dtype and torch.equal(got.isnan(), want.isnan())
        assert torch.equal(torch.nan_to_num(got), torch.nan_to_num(want)), (a, got, want)

"""The fuzzer's generator itself: every seed gives a program whose inputs can be built."""
import pytest

from fuzz import gen, harness


@pytest.mark.parametrize("seed", [6852])
def test_overlapping_views_keep_a_layout_their_shape_allows(seed):
    # seed 6852: two overlapping views of one base took a 0-d shape, and x1 kept the "expand"
    # layout chosen for its old shape (expand() of a 0-d tensor raised in make_inputs)
    prog = gen.generate(seed)
    for spec in prog["inputs"]:
        assert gen.fitting_layout(spec["layout"], spec["shape"]) == spec["layout"]
    harness.make_inputs(prog, 0)

import collections
import dataclasses
import functools
import itertools

import torch


@dataclasses.dataclass
class Stats:
    mean: torch.Tensor
    std: torch.Tensor

    def normalize(self, x):
        return (x - self.mean) / self.std


class Scaler:
    factor = 2.0

    def __init__(self, bias):
        self.bias = bias

    def __call__(self, x):
        return x * self.factor + self.bias


def fn(x):
    st = Stats(x.mean(0), x.std(0))
    q = collections.deque([st.normalize(x)], maxlen=2)
    for a, b in itertools.combinations(range(3), 2):
        q.append(q[-1] * a + b)
    add = functools.partial(torch.add, alpha=0.5)
    s = Scaler(add(q.popleft(), 1))
    return s(q.pop()), s, q


def args():
    return (torch.randn(4, 3),)

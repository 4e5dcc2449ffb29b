import torch

class Counter:
    def __init__(self):
        self.n = 0

state = {"calls": 0}
counter = Counter()
history = []

def fn(x):
    counter.n += 1
    state["calls"] = state["calls"] + 1
    history.append(x * 2)
    global LAST
    LAST = x.sum()
    return x + counter.n

def args():
    return (torch.randn(2),)

import torch
import torch.nn as nn

class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    @property
    def scale(self):
        return 2.0

    def forward(self, x):
        return self.lin(x) * self.scale

class Child(Base):
    def forward(self, x):
        return super().forward(x) + 1

model = Child()
fn = Child.forward

def args():
    return (model, torch.randn(1, 3))

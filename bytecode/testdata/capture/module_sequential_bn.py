import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2)).eval()
fn = type(model).forward

def args():
    return (model, torch.randn(1, 3, 8, 8))

import torch


def is_dynamo():
    try:
        import torch._dynamo as dynamo

        return dynamo.is_compiling()
    except Exception:
        return False


def fn(x, d):
    try:
        scale = d["scale"]
    except KeyError:
        scale = 1.0
    try:
        with torch.no_grad():
            y = x * scale
            raise ValueError("stop")
    except ValueError as e:
        tag = str(e)
    return y + is_dynamo(), tag


def args():
    return (torch.randn(3), {"shift": 2})

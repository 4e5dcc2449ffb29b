def fn(a, b):
    return [a + b, a * b]

def args():
    return (2, 3)

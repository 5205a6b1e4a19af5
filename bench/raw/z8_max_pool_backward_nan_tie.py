"""Z8 (numfuzz's noise, not fixed): the gradient of max_pool2d over a window of two NaNs.
Eager's CPU kernel routes the gradient to the last NaN of the window, Inductor to the first
(ties of equal finite values go to the first in both). Which of two NaNs is "the max" is not
defined, so the gradients differ without a bug; numfuzz's gradient judge still reads it as an
accuracy loss (night of 2026-12-07, signature d938cdc5fa9e0db3, bench/results/41). Prints
each input's gradient in eager, compiled and float64, and the forward indices of the all-NaN
windows."""
import torch
import torch.nn.functional as F


def pool(x):
    return F.max_pool2d(x, 2, stride=1, padding=1, dilation=1, ceil_mode=True)


def gradient(fn, values):
    x = torch.tensor(values).reshape(1, 1, 2, 1).requires_grad_()
    fn(x).sum().backward()
    return x.grad.flatten().tolist()


compiled = torch.compile(pool, fullgraph=True, dynamic=False)
for values in ([float("nan")] * 2, [1.0, 1.0], [1.0, float("nan")], [float("nan"), 1.0]):
    print(values, "eager", gradient(pool, values), "compiled", gradient(compiled, values),
          "float64", gradient(lambda x: pool(x.double()), values))
x = torch.full((1, 1, 2, 1), float("nan"))
print("indices: eager", F.max_pool2d(x, 2, 1, 1, 1, True, True)[1].flatten().tolist(),
      "compiled", torch.compile(lambda x: F.max_pool2d(x, 2, 1, 1, 1, True, True))(x)[1]
      .flatten().tolist())

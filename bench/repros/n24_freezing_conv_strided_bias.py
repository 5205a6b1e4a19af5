"""A frozen conv2d whose bias is a non-contiguous view (every other element of a buffer, as
weights loaded into one allocation can be): with torch._inductor.config.freezing the conv is
rewritten to mkldnn's _convolution_pointwise, which reads the bias as if it were contiguous:
channel k gets the buffer's element k instead of 2k, the gaps among them (NaN here, to make it
visible; in a model, the next tensor's values). A strided weight is repacked and fine; freezing
off, fine.
numfuzz's night of 2026-12-07 (bench/results/41), signature a55e6baaa1bcd09f, minimized to a
conv of zeros whose output is its bias. Exit 1 while compiled differs from eager."""
import sys

import torch
import torch.nn.functional as F

torch._inductor.config.freezing = True


class Conv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.w = torch.nn.Parameter(torch.randn(16, 3, 3, 3), requires_grad=False)
        buffer = torch.full((32,), float("nan"))  # the bias lives at a stride of 2 in it
        buffer[::2] = torch.randn(16)
        self.b = torch.nn.Parameter(buffer[::2], requires_grad=False)

    def forward(self, x):
        return F.conv2d(x, self.w, self.b, stride=2, padding=1)


m, x = Conv(), torch.randn(2, 3, 8, 8)
with torch.no_grad():
    eager, compiled = m(x), torch.compile(m)(x)
bad = ~torch.isclose(eager, compiled, rtol=1e-4, atol=1e-4)  # NaN is close to nothing
channels = sorted({int(i) for i in bad.nonzero()[:, 1]})
print(f"bias stride {m.b.stride()}: eager NaN {int(eager.isnan().sum())}, compiled NaN "
      f"{int(compiled.isnan().sum())} of {compiled.numel()}; differing channels {channels}")
sys.exit(1 if bad.any() else 0)

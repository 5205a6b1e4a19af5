"""Eager, no compile: a bfloat16 1x1 conv with 3 input channels on channels_last leaks a NaN of
one pixel into its neighbour (oneDNN's brgconv_1x1 packs input channels in pairs and reads a
4th channel from the next pixel: NaN x the zero padding weight is NaN); NCHW and float32 are
clean. Inductor picks channels_last for the conv, so a compiled model shows it where eager
(NCHW) does not: numfuzz's night of 2026-12-07 (bench/results/41), signature ef8636a49d62c5f0,
``sign(avg_pool2d(conv2d(x)))`` under automatic dynamic shapes. Seen on an AVX-512 BF16 CPU
(oneDNN's avx512_core_bf16 kernel); needs a NaN or inf in the input. Exit 1 while it leaks."""
import sys

import torch
import torch.nn.functional as F

x = torch.zeros(1, 3, 3, 2, dtype=torch.bfloat16)
x[0, 0, 2, 0] = float("nan")  # pixel 4 (row 2, column 0), channel 0
w = torch.zeros(16, 3, 1, 1, dtype=torch.bfloat16)
b = torch.full((16,), -0.01953125, dtype=torch.bfloat16)
nchw = F.conv2d(x, w, b)[0, 0].flatten()
nhwc = F.conv2d(x.to(memory_format=torch.channels_last),
                w.to(memory_format=torch.channels_last), b)[0, 0].flatten()
print(f"CPU capability {torch.backends.cpu.get_cpu_capability()}; channel 0 by pixel: "
      f"NCHW {nchw.tolist()}, channels_last {nhwc.tolist()}")
leaked = int(nhwc.isnan().sum()) > int(nchw.isnan().sum())
print("a NaN leaked into a finite neighbour" if leaked else "no leak")
sys.exit(1 if leaked else 0)

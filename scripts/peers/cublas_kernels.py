"""Runs torch.mm (cuBLAS) once per shape so that a profiler can name the kernel cuBLAS picks.

    ncu --metrics gpu__time_duration.sum python3 scripts/peers/cublas_kernels.py 512x4096x4096 ...

Each shape MxNxK is C[M, N] = A[M, K] . B[N, K]^T in f16 (bf16 with --bf16), the layout the
library's `Gemm` takes; a warm-up launch precedes the profiled one, and an NVTX range names it.
"""
import sys

import torch

dtype = torch.bfloat16 if "--bf16" in sys.argv else torch.float16
for spec in (a for a in sys.argv[1:] if not a.startswith("--")):
    m, n, k = (int(x) for x in spec.split("x"))
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(n, k, device="cuda", dtype=dtype)
    torch.mm(a, b.t())
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(spec)
    torch.mm(a, b.t())
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    print(spec, flush=True)

"""Times attention peers on the shapes `tilus bench attention` takes, for docs/perf.md.

    python3 scripts/peers/attention.py --head-dims 64,128,256 --seqs 1024,4096,16384 \
        --tokens 16384 --width 2048 [--kv-heads 8] [--causal false,true] [--dtypes f16,bf16]

Peers: PyTorch's scaled_dot_product_attention with the cuDNN backend, and with its flash
backend; FlashAttention's own packages where they are installed (flash_attn_interface for
FA3, flash_attn for FA2). Inputs are [batch, seq, heads, dim] like ours, passed to SDPA as
transposed views ([batch, heads, seq, dim]). Each peer's output is checked on a few rows
against an f64 recomputation before it is timed; timing is the median of CUDA-event
intervals over --rounds launches after --warmup. One line per case and peer, in the
format of `tilus bench attention`'s lines so that the two can be laid side by side.

    python3 scripts/peers/attention.py --decode --contexts 1x8192,16x4096,64x4096,32x32768 \
        --head-dims 128 --width 4096 --kv-heads 8 [--queries 1]

times a decode step instead (`tilus bench attention --decode`): SDPA on cuDNN and on its
flash backend with `queries` new tokens per sequence over a contiguous cache of `context`
positions ([batch, context, kv_heads, dim], passed as transposed views), the new tokens
causal among themselves (bottom right). The figure is the keys' and values' bytes per
second; L2 is flushed before each timed launch (the cache of a batch of one fits in it), as
`tilus bench` does.
"""
import argparse
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def median_ms(fn, warmup, rounds, flush=False):
    """The median of CUDA-event intervals over `rounds` launches after `warmup`; with
    `flush`, each after a write of 256 MB (L2 holds none of the inputs) and a read of 128 MB
    (the write's dirty lines go back to memory before the launch, not during it), as
    `tilus bench` does."""
    scrub = torch.empty(256 << 20, dtype=torch.uint8, device="cuda") if flush else None
    sweep = torch.zeros(32 << 20, dtype=torch.int32, device="cuda") if flush else None
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(rounds):
        if scrub is not None:
            scrub.fill_(1)
            sweep.max()
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def decode(a):
    """The decode peers, one line per case and peer."""
    from torch.nn.attention.bias import causal_lower_right

    gen = torch.Generator(device="cuda").manual_seed(2)
    nq = a.queries
    for t in a.dtypes.split(","):
        dtype = {"f16": torch.float16, "bf16": torch.bfloat16}[t]
        for d in (int(x) for x in a.head_dims.split(",")):
            hq = a.width // d
            hkv = a.kv_heads or hq
            for pair in a.contexts.split(","):
                b, ctx = (int(x) for x in pair.split("x"))
                q = torch.rand((b, nq, hq, d), device="cuda", dtype=dtype, generator=gen) * 2 - 1
                k = torch.rand((b, ctx, hkv, d), device="cuda", dtype=dtype, generator=gen) * 2 - 1
                v = torch.rand((b, ctx, hkv, d), device="cuda", dtype=dtype, generator=gen) * 2 - 1
                scale = d**-0.5
                mask = causal_lower_right(nq, ctx) if nq > 1 else None
                gbytes = 2 * b * ctx * hkv * d * q.element_size()
                rows = [(0, 0, 0), (b - 1, nq - 1, hq - 1)] + [
                    (int(x) % b, int(y) % nq, int(z) % hq)
                    for x, y, z in torch.randint(0, 1 << 30, (6, 3)).tolist()
                ]
                want = []
                for bb, i, h in rows:
                    hk = h // (hq // hkv)
                    last = ctx - nq + i
                    sc = k[bb, : last + 1, hk].double() @ q[bb, i, h].double() * scale
                    want.append(torch.softmax(sc, dim=0) @ v[bb, : last + 1, hk].double())
                for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("torch-flash", SDPBackend.FLASH_ATTENTION)):
                    if a.peers and name not in a.peers.split(","):
                        continue

                    def fn():
                        with sdpa_kernel([backend]):
                            return F.scaled_dot_product_attention(
                                q.transpose(1, 2),
                                k.transpose(1, 2),
                                v.transpose(1, 2),
                                attn_mask=mask,
                                scale=scale,
                                enable_gqa=hkv != hq,
                            ).transpose(1, 2)

                    label = f"{name} decode {t} d={d} b={b} ctx={ctx} queries={nq} heads={hq}/{hkv}"
                    try:
                        o = fn()
                        torch.cuda.synchronize()
                    except Exception as e:  # a backend that does not take the case
                        print(f"{label}: not run ({type(e).__name__}: {str(e).splitlines()[0][:120]})", flush=True)
                        continue
                    err = max(
                        ((o[bb, i, h].double() - w).abs() / (1 + w.abs())).max().item()
                        for (bb, i, h), w in zip(rows, want)
                    )
                    ms = median_ms(fn, a.warmup, a.rounds, flush=True)
                    print(f"{label}: {ms:.4f} ms {gbytes / ms / 1e9:.3f} TB/s max err {err:.2e}", flush=True)


def reference_rows(q, k, v, causal, rows, scale):
    """The exact output of (row, head) pairs, in f64."""
    out = []
    s = q.shape[1]
    hq, hkv = q.shape[2], k.shape[2]
    for b, i, h in rows:
        hk = h // (hq // hkv)
        qi = q[b, i, h].double()
        keys = k[b, :, hk].double()
        vals = v[b, :, hk].double()
        sc = keys @ qi * scale
        if causal:
            sc[i + 1 :] = float("-inf")
        p = torch.softmax(sc, dim=0)
        out.append(p @ vals)
    return out


def peers(kv_heads_differ):
    def sdpa(backend):
        def run(q, k, v, causal, scale):
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(
                    q.transpose(1, 2),
                    k.transpose(1, 2),
                    v.transpose(1, 2),
                    is_causal=causal,
                    scale=scale,
                    enable_gqa=kv_heads_differ,
                ).transpose(1, 2)

        return run

    found = [("cudnn", sdpa(SDPBackend.CUDNN_ATTENTION)), ("torch-flash", sdpa(SDPBackend.FLASH_ATTENTION))]
    try:
        import flash_attn_interface as fa3

        def run3(q, k, v, causal, scale):
            r = fa3.flash_attn_func(q, k, v, softmax_scale=scale, causal=causal)
            return r[0] if isinstance(r, tuple) else r

        found.append(("fa3", run3))
    except ImportError:
        pass
    try:
        import flash_attn

        found.append(
            ("fa2", lambda q, k, v, causal, scale: flash_attn.flash_attn_func(q, k, v, softmax_scale=scale, causal=causal))
        )
    except ImportError:
        pass
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--head-dims", default="64,128,256")
    ap.add_argument("--seqs", default="1024,4096,16384")
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--width", type=int, default=2048)
    ap.add_argument("--kv-heads", type=int, default=0)
    ap.add_argument("--causal", default="false,true")
    ap.add_argument("--dtypes", default="f16")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--peers", default="", help="comma-separated subset of peer names")
    ap.add_argument("--decode", action="store_true", help="time a decode step instead")
    ap.add_argument("--contexts", default="1x8192,16x4096,64x4096,32x32768")
    ap.add_argument("--queries", type=int, default=1)
    a = ap.parse_args()
    print("GPU:", torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    if a.decode:
        decode(a)
        return
    gen = torch.Generator(device="cuda").manual_seed(1)
    for t in a.dtypes.split(","):
        dtype = {"f16": torch.float16, "bf16": torch.bfloat16}[t]
        for d in (int(x) for x in a.head_dims.split(",")):
            hq = a.width // d
            hkv = a.kv_heads or hq
            for s in (int(x) for x in a.seqs.split(",")):
                b = a.tokens // s
                for causal in (x == "true" for x in a.causal.split(",")):
                    shape_q, shape_kv = (b, s, hq, d), (b, s, hkv, d)
                    q = torch.rand(shape_q, device="cuda", dtype=dtype, generator=gen) * 2 - 1
                    k = torch.rand(shape_kv, device="cuda", dtype=dtype, generator=gen) * 2 - 1
                    v = torch.rand(shape_kv, device="cuda", dtype=dtype, generator=gen) * 2 - 1
                    scale = d**-0.5
                    flops = 4 * b * hq * s * s * d / (2 if causal else 1)
                    rows = [(0, 0, 0), (b - 1, s - 1, hq - 1)] + [
                        (int(x) % b, int(y) % s, int(z) % hq)
                        for x, y, z in torch.randint(0, 1 << 30, (14, 3)).tolist()
                    ]
                    want = reference_rows(q, k, v, causal, rows, scale)
                    for name, fn in peers(hkv != hq):
                        if a.peers and name not in a.peers.split(","):
                            continue
                        label = f"{name} {t} d={d} s={s} b={b} heads={hq}/{hkv} causal={str(causal).lower()}"
                        try:
                            o = fn(q, k, v, causal, scale)
                            torch.cuda.synchronize()
                        except Exception as e:  # a backend that does not take the case
                            print(f"{label}: not run ({type(e).__name__}: {str(e).splitlines()[0][:120]})", flush=True)
                            continue
                        err = max(
                            ((o[bb, i, h].double() - w).abs() / (1 + w.abs())).max().item()
                            for (bb, i, h), w in zip(rows, want)
                        )
                        ms = median_ms(lambda: fn(q, k, v, causal, scale), a.warmup, a.rounds)
                        print(
                            f"{label}: {ms:.4f} ms {flops / ms / 1e9:.1f} TFLOPS max err {err:.2e}",
                            flush=True,
                        )


if __name__ == "__main__":
    main()

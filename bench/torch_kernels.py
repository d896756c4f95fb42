"""PyTorch's side of bench/kernels.c: the same cases (names, shapes, transpositions), timed the
same way (warm-up, batches of calls of at least 20 ms, median batch). GEMMs are torch.mm /
torch.matmul into a preallocated output on transposed views, as autograd calls them; the
convolution kernels are aten::convolution_backward with one output mask bit, which is what
autograd runs for conv2d's input and weight gradients. Prints "NAME ms_per_call gflops".
    usage: torch_kernels.py [MIN_SECONDS_PER_CASE] [FILTER_SUBSTRING]"""
import os
import sys
import time

import torch

torch.set_num_threads(int(os.environ.get("MG_BENCH_THREADS", "1")))
min_secs = float(sys.argv[1]) if len(sys.argv) > 1 else 0.3
filter_ = sys.argv[2] if len(sys.argv) > 2 else ""


def gemm(name, m, n, k, ta, tb):
    return (name, "gemm", (1, 1, m, n, k, ta, tb))


def bmm(name, b0, b1, m, n, k, ta, tb):
    return (name, "gemm", (b0, b1, m, n, k, ta, tb))


def conv(name, kind, n, c, h, co, k, s, p):
    return (name, kind, (n, c, h, co, k, s, p))


# Keep in step with the table in bench/kernels.c.
cases = [
    gemm("mlp.fwd_784x1024", 256, 1024, 784, 0, 0),
    gemm("mlp.fwd_1024x1024", 256, 1024, 1024, 0, 0),
    gemm("mlp.dx_1024x1024", 256, 1024, 1024, 0, 1),
    gemm("mlp.dw_1024x1024", 1024, 1024, 256, 1, 0),
    gemm("mlp.dw_784x1024", 784, 1024, 256, 1, 0),
    gemm("tf.qkv_fwd", 1024, 256, 256, 0, 0),
    gemm("tf.ff1_fwd", 1024, 1024, 256, 0, 0),
    gemm("tf.ff2_fwd", 1024, 256, 1024, 0, 0),
    gemm("tf.ff1_dx", 1024, 256, 1024, 0, 1),
    gemm("tf.ff1_dw", 256, 1024, 1024, 1, 0),
    gemm("tf.logits_fwd", 1024, 1000, 256, 0, 0),
    gemm("tf.logits_dw", 256, 1000, 1024, 1, 0),
    bmm("tf.attn_qk", 8, 4, 128, 128, 64, 0, 0),
    bmm("tf.attn_av", 8, 4, 128, 64, 128, 0, 0),
    bmm("tf.attn_dp", 8, 4, 128, 128, 64, 0, 1),
    bmm("tf.attn_dv", 8, 4, 128, 64, 128, 1, 0),
    conv("cnn.conv1_fwd", "fwd", 128, 1, 28, 32, 3, 1, 1),
    conv("cnn.conv1_dw", "dw", 128, 1, 28, 32, 3, 1, 1),
    conv("cnn.conv2_fwd", "fwd", 128, 32, 14, 64, 3, 1, 1),
    conv("cnn.conv2_dx", "dx", 128, 32, 14, 64, 3, 1, 1),
    conv("cnn.conv2_dw", "dw", 128, 32, 14, 64, 3, 1, 1),
    conv("rn.stem_fwd", "fwd", 16, 3, 64, 64, 7, 2, 3),
    conv("rn.l1_fwd", "fwd", 16, 64, 16, 64, 3, 1, 1),
    conv("rn.l1_dx", "dx", 16, 64, 16, 64, 3, 1, 1),
    conv("rn.l1_dw", "dw", 16, 64, 16, 64, 3, 1, 1),
    conv("rn.l3_fwd", "fwd", 16, 256, 4, 256, 3, 1, 1),
    conv("rn.l3_dx", "dx", 16, 256, 4, 256, 3, 1, 1),
    conv("rn.l3_dw", "dw", 16, 256, 4, 256, 3, 1, 1),
    conv("rn.l4_fwd", "fwd", 16, 512, 2, 512, 3, 1, 1),
    conv("rn.l4_dx", "dx", 16, 512, 2, 512, 3, 1, 1),
    conv("rn.l4_dw", "dw", 16, 512, 2, 512, 3, 1, 1),
    conv("unet.l1_fwd", "fwd", 8, 16, 64, 16, 3, 1, 1),
    conv("unet.l1_dx", "dx", 8, 16, 64, 16, 3, 1, 1),
    conv("unet.l1_dw", "dw", 8, 16, 64, 16, 3, 1, 1),
    conv("unet.up1_fwd", "fwd", 8, 32, 64, 16, 3, 1, 1),
    conv("unet.up1_dx", "dx", 8, 32, 64, 16, 3, 1, 1),
    conv("unet.up1_dw", "dw", 8, 32, 64, 16, 3, 1, 1),
    conv("unet.bott_fwd", "fwd", 8, 128, 8, 128, 3, 1, 1),
]


def make(kind, p):
    """Returns (callable, flops) for one case."""
    if kind == "gemm":
        b0, b1, m, n, k, ta, tb = p
        a = torch.rand(b0, b1, k, m) if ta else torch.rand(b0, b1, m, k)
        b = torch.rand(b0, b1, n, k) if tb else torch.rand(b0, b1, k, n)
        a = a.transpose(-1, -2) if ta else a
        b = b.transpose(-1, -2) if tb else b
        if b0 * b1 == 1:
            a, b = a[0, 0], b[0, 0]
        out = torch.empty(*a.shape[:-1], n)
        fn = (lambda: torch.mm(a, b, out=out)) if b0 * b1 == 1 else (lambda: torch.matmul(a, b, out=out))
        return fn, 2.0 * b0 * b1 * m * n * k
    n, c, h, co, k, s, pad = p
    oh = (h + 2 * pad - k) // s + 1
    x = torch.rand(n, c, h, h)
    w = torch.rand(co, c, k, k)
    dy = torch.rand(n, co, oh, oh)
    flops = 2.0 * n * co * oh * oh * c * k * k
    if kind == "fwd":
        return (lambda: torch.nn.functional.conv2d(x, w, stride=s, padding=pad)), flops
    mask = [kind == "dx", kind == "dw", False]
    return (lambda: torch.ops.aten.convolution_backward(dy, x, w, None, [s, s], [pad, pad], [1, 1], False,
                                                        [0, 0], 1, mask)), flops


with torch.no_grad():
    for name, kind, p in cases:
        if filter_ not in name:
            continue
        fn, flops = make(kind, p)
        fn()
        t0 = time.perf_counter()
        fn()
        once = time.perf_counter() - t0
        per_batch = 1 if once > 0.02 else int(0.02 / max(once, 1e-7)) + 1
        times = []
        start = time.perf_counter()
        while len(times) < 1000 and (len(times) < 5 or time.perf_counter() - start < min_secs):
            t0 = time.perf_counter()
            for _ in range(per_batch):
                fn()
            times.append((time.perf_counter() - t0) / per_batch)
        times.sort()
        med = times[len(times) // 2]
        print("%s %.4f %.2f" % (name, 1e3 * med, flops / med / 1e9), flush=True)

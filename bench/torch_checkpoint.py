"""PyTorch's activation checkpointing on the architectures of examples/*.mg (bench/torch_models.py),
for bench/planner.py's comparison with memgrad's planner.

    OPENBLAS_NUM_THREADS=1 python3 bench/torch_checkpoint.py MODEL [reps]
    MODEL: mlp_deep, cnn_fmnist, transformer, resnet18_64, unet_small

Configurations, each one training step (forward, cross-entropy, backward; no optimizer update):
  - none: plain eager autograd;
  - mlp_deep, cnn_fmnist, resnet18_64 (nn.Sequential models): checkpoint_sequential(model, k, x)
    for k = 2, 4, 8, 16 and the number of modules (the input gets requires_grad in every
    configuration: torch 1.13's reentrant checkpoint gives the first segment's parameters no
    gradient otherwise);
  - transformer: the embedding, then checkpoint_sequential over [6 blocks, final LN + output
    projection] for k = 2, 4, 7;
  - unet_small (its skips cross the blocks, so it is not sequential): torch.utils.checkpoint on its
    double-conv blocks: the encoder's (3 levels and the bottleneck), the decoder's (3), all 7.
For each it measures:
  - saved_peak_bytes: the peak bytes of the tensors autograd keeps for the backward pass (every
    tensor saved through torch.autograd.graph.saved_tensors_hooks except the parameters, counted
    once per storage from when it is saved until it is freed) — the activation memory
    checkpointing trades for compute;
  - flops: the matmul and convolution FLOPs the step executes (aten mm, addmm, bmm, convolution,
    convolution_backward, counted by a TorchDispatchMode; elementwise ops are not counted), so
    the recomputation checkpointing adds is counted, not estimated;
  - step_ms, step_cpu_ms: the median wall-clock and process CPU time of a step over `reps` rounds
    (each round times every configuration once, in turn), and their overheads against `none`.
Prints one JSON object per line.
"""
import json
import os
import statistics
import sys
import time
import weakref

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_models  # noqa: E402

torch.set_num_threads(int(os.environ.get("MG_BENCH_THREADS", "1")))
aten = torch.ops.aten


def conv_flops(out_like, inp, weight, transposed):
    """2 x multiply-adds of a convolution: every element of the (non-transposed) output takes
    weight.shape[1] * kernel elements (weight: [Cout, Cin/g, k...], transposed: [Cin, Cout/g, k...])"""
    kernel = 1
    for d in weight.shape[2:]:
        kernel *= d
    side = inp if transposed else out_like
    return 2 * side.numel() * weight.shape[1] * kernel


class Flops(TorchDispatchMode):
    """Counts the FLOPs of the matmuls and convolutions run under it (forward and backward)."""

    def __init__(self):
        super().__init__()
        self.flops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is aten.mm.default:
            a, b = args[0], args[1]
            self.flops += 2 * a.shape[0] * a.shape[1] * b.shape[1]
        elif func is aten.addmm.default:
            a, b = args[1], args[2]
            self.flops += 2 * a.shape[0] * a.shape[1] * b.shape[1]
        elif func is aten.bmm.default:
            a, b = args[0], args[1]
            self.flops += 2 * a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2]
        elif func is aten.convolution.default:
            self.flops += conv_flops(out, args[0], args[1], args[6])
        elif func is aten.convolution_backward.default:
            grad_out, inp, weight, transposed, mask = args[0], args[1], args[2], args[7], args[10]
            self.flops += conv_flops(grad_out, inp, weight, transposed) * (int(mask[0]) + int(mask[1]))
        return out


class Saved:
    """Live bytes of saved tensors, per storage."""

    def __init__(self, param_storages):
        self.params = param_storages
        self.live = {}
        self.bytes = 0
        self.peak = 0

    def pack(self, t):
        # autograd keeps the object pack returns until the graph frees it; several saved
        # tensors may share one storage
        key = t.storage().data_ptr()
        if key in self.params:  # weights are not activations (memgrad keeps them in params)
            return t
        if key not in self.live:
            self.live[key] = [t.storage().nbytes(), 0]
            self.bytes += self.live[key][0]
            self.peak = max(self.peak, self.bytes)
        self.live[key][1] += 1
        held = t.detach()
        weakref.finalize(held, self.free, key)
        return held

    def free(self, key):
        entry = self.live[key]
        entry[1] -= 1
        if entry[1] == 0:
            self.bytes -= entry[0]
            del self.live[key]

    def unpack(self, held):
        return held


class Checkpointed(nn.Module):
    """A block that runs under torch.utils.checkpoint when `on` is set."""

    def __init__(self, block):
        super().__init__()
        self.block = block
        self.on = False

    def forward(self, x):
        return checkpoint(self.block, x) if self.on else self.block(x)


class Block(nn.Module):
    def __init__(self, t, l):
        super().__init__()
        self.t, self.l = [t], l  # a list: not registered twice as a submodule

    def forward(self, h):
        return self.t[0].block(self.l, h)


class Head(nn.Module):
    def __init__(self, t):
        super().__init__()
        self.t = [t]

    def forward(self, h):
        return self.t[0].head(h)


def ks(n):
    return [k for k in (2, 4, 8, 16) if k < n] + [n]


def build(name):
    """(model, target, [(label, segments or None, forward function)])"""
    torch.manual_seed(0)
    if name in ("mlp_deep", "cnn_fmnist", "resnet18_64"):
        model, x, y = torch_models.MODELS[name]()
        x.requires_grad_(True)
        n = len(list(model.children()))
        configs = [("none", 0, lambda: model(x))]
        configs += [(f"checkpoint_sequential k={k}", k, lambda k=k: checkpoint_sequential(model, k, x)) for k in ks(n)]
        return model, x, y, configs
    if name == "transformer":
        model, ids, y = torch_models.transformer()
        seq = nn.Sequential(*[Block(model, l) for l in model.layers], Head(model))
        n = len(seq)
        configs = [("none", 0, lambda: seq(model.embed(ids)))]
        configs += [(f"embedding, checkpoint_sequential k={k}", k,
                     lambda k=k: checkpoint_sequential(seq, k, model.embed(ids))) for k in (2, 4, n)]
        return model, None, y, configs
    if name == "unet_small":
        model, x, y = torch_models.unet_small()
        x.requires_grad_(True)
        for i in range(3):
            model.down[i] = Checkpointed(model.down[i])
            model.dec[i] = Checkpointed(model.dec[i])
        model.bottleneck = Checkpointed(model.bottleneck)
        enc = [model.down[0], model.down[1], model.down[2], model.bottleneck]
        dec = [model.dec[0], model.dec[1], model.dec[2]]

        def only(blocks):
            def fwd():
                for b in enc + dec:
                    b.on = b in blocks
                return model(x)
            return fwd

        configs = [("none", 0, only([])), ("checkpoint: encoder blocks (4)", None, only(enc)),
                   ("checkpoint: decoder blocks (3)", None, only(dec)),
                   ("checkpoint: all double-conv blocks (7)", None, only(enc + dec))]
        return model, x, y, configs
    sys.exit("torch_checkpoint.py: no PyTorch version of " + name + "; one of mlp_deep, cnn_fmnist, "
             "transformer, resnet18_64, unet_small")


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: torch_checkpoint.py MODEL [reps]")
    name = sys.argv[1]
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    model, x, y, configs = build(name)
    model.train()
    params = list(model.parameters())
    param_storages = {p.storage().data_ptr() for p in params}

    def step(fwd):
        for p in params:
            p.grad = None
        if x is not None:
            x.grad = None
        F.cross_entropy(fwd(), y).backward()  # over the class axis 1, every position for unet
        missing = sum(p.grad is None for p in params)
        if missing:
            sys.exit(f"torch_checkpoint.py: {name}: {missing} parameters got no gradient")

    measured = []
    for label, segments, fwd in configs:
        saved = Saved(param_storages)
        with torch.autograd.graph.saved_tensors_hooks(saved.pack, saved.unpack):
            step(fwd)
        counter = Flops()
        with counter:
            step(fwd)
        measured.append((saved.peak, counter.flops))
    # the configurations timed in turn, round after round, so a change of the machine's load
    # touches them all alike
    wall, cpu = [[] for _ in configs], [[] for _ in configs]
    for _ in range(reps):
        for i, (_, _, fwd) in enumerate(configs):
            t0, c0 = time.perf_counter(), time.process_time()
            step(fwd)
            c1, t1 = time.process_time(), time.perf_counter()
            wall[i].append(t1 - t0)
            cpu[i].append(c1 - c0)
    wall = [1e3 * statistics.median(w) for w in wall]
    cpu = [1e3 * statistics.median(c) for c in cpu]
    for i, (label, segments, _) in enumerate(configs):
        peak, flops = measured[i]
        print(json.dumps({"model": name, "config": label, "segments": segments, "saved_peak_bytes": peak,
                          "flops": flops, "flop_overhead": round(flops / measured[0][1] - 1, 6),
                          "step_ms": round(wall[i], 3), "step_cpu_ms": round(cpu[i], 3),
                          "time_overhead": round(wall[i] / wall[0] - 1, 4),
                          "cpu_overhead": round(cpu[i] / cpu[0] - 1, 4)}), flush=True)

if __name__ == "__main__":
    main()

"""PyTorch's checkpoint_sequential on the architecture of examples/mlp_deep.mg (batch 256,
784 -> 16 x (Linear 1024 + ReLU) -> Linear 10, cross-entropy), for bench/planner.py.

For each segment count it measures, in one training step:
  - the peak bytes of the tensors autograd keeps for the backward pass (every tensor saved
    through torch.autograd.graph.saved_tensors_hooks except the weights, counted once per
    storage from when it is saved until it is freed) — the activation memory checkpointing
    trades for time;
  - the median step time over several steps, and its overhead against no checkpointing.
Prints one JSON object per line.

    OPENBLAS_NUM_THREADS=1 python3 bench/torch_checkpoint.py [reps]
"""
import json
import os
import statistics
import sys
import time
import weakref

import torch
from torch.utils.checkpoint import checkpoint_sequential

torch.set_num_threads(int(os.environ.get("MG_BENCH_THREADS", "1")))
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5

torch.manual_seed(0)
layers = [torch.nn.Linear(784, 1024), torch.nn.ReLU()]
for _ in range(15):
    layers += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
layers += [torch.nn.Linear(1024, 10)]
model = torch.nn.Sequential(*layers)
# requires_grad on the input: torch 1.13's reentrant checkpoint gives no parameter gradients
# otherwise
x = torch.rand(256, 784, requires_grad=True)
y = torch.randint(0, 10, (256,))
loss_fn = torch.nn.CrossEntropyLoss()


param_storages = {p.storage().data_ptr() for p in model.parameters()}


class Saved:
    """Live bytes of saved tensors, per storage."""

    def __init__(self):
        self.live = {}
        self.bytes = 0
        self.peak = 0

    def pack(self, t):
        # autograd keeps the object pack returns until the graph frees it; several saved
        # tensors may share one storage
        key = t.storage().data_ptr()
        if key in param_storages:  # weights are not activations (memgrad keeps them in params)
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


def step(segments, saved=None):
    for p in model.parameters():
        p.grad = None
    x.grad = None

    def run():
        out = model(x) if segments == 0 else checkpoint_sequential(model, segments, x)
        loss_fn(out, y).backward()

    if saved is None:
        run()
    else:
        with torch.autograd.graph.saved_tensors_hooks(saved.pack, saved.unpack):
            run()
    assert all(p.grad is not None for p in model.parameters())


base = None
for segments in [0, 2, 4, 8, 16, 33]:
    saved = Saved()
    step(segments, saved)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        step(segments)
        times.append(time.perf_counter() - t0)
    ms = 1e3 * statistics.median(times)
    if segments == 0:
        base = ms
    print(json.dumps({"segments": segments, "saved_peak_bytes": saved.peak, "step_ms": round(ms, 3),
                      "time_overhead": round(ms / base - 1, 4)}), flush=True)

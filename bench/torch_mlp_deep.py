"""The same training step as examples/mlp_deep.mg in PyTorch eager (forward, cross-entropy,
backward; no optimizer update, like NAME_train_step). Prints one "step_ms X" line per call."""
import os
import sys
import time

import torch

threads = int(os.environ.get("MG_BENCH_THREADS", "1"))
torch.set_num_threads(threads)
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 10

layers = [torch.nn.Linear(784, 1024), torch.nn.ReLU()]
for _ in range(15):
    layers += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
layers += [torch.nn.Linear(1024, 10)]
model = torch.nn.Sequential(*layers)
x = torch.rand(256, 784)
y = torch.randint(0, 10, (256,))
loss_fn = torch.nn.CrossEntropyLoss()


def step():
    for p in model.parameters():
        p.grad = None
    loss = loss_fn(model(x), y)
    loss.backward()
    return loss.item()


step()  # warm-up
for _ in range(reps):
    t0 = time.perf_counter()
    step()
    print("step_ms %.3f" % (1e3 * (time.perf_counter() - t0)), flush=True)

"""The reference models of examples/*.mg in PyTorch eager, for bench/run.sh: one training step
(forward, loss, backward; no optimizer update, like NAME_train_step), same shapes and layers.
Prints "params N" (trainable parameters, to check against the .mg) and then one
"step_ms WALL CPU" line per timed call (wall-clock and process CPU milliseconds).
    usage: torch_models.py MODEL [REPS] [FORMAT]      (env MG_BENCH_THREADS, default 1)
MODEL: mlp_deep, cnn_fmnist, transformer, resnet18_64, unet_small.
FORMAT: nchw (default: PyTorch's contiguous tensors) or channels_last (the convolutional models'
weights and input in torch.channels_last, which oneDNN often prefers on CPU; run.sh times both
and compares memgrad with the faster). Convolutions run through oneDNN (aten::mkldnn_convolution)
either way; main() refuses to time a convolutional model if torch.backends.mkldnn is off."""
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(int(os.environ.get("MG_BENCH_THREADS", "1")))


def mlp_deep():
    """batch 256, 784 -> 16 x (Linear 1024 + ReLU) -> Linear 10 (examples/mlp_deep.mg)"""
    layers = [nn.Linear(784, 1024), nn.ReLU()]
    for _ in range(15):
        layers += [nn.Linear(1024, 1024), nn.ReLU()]
    layers += [nn.Linear(1024, 10)]
    return nn.Sequential(*layers), torch.rand(256, 784), torch.randint(0, 10, (256,))


def cnn_fmnist():
    """batch 128 x 1x28x28: conv3x3 32 + ReLU + pool, conv3x3 64 + ReLU + pool, 3136 -> 128 -> 10"""
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
    return model, torch.rand(128, 1, 28, 28), torch.randint(0, 10, (128,))


class Transformer(nn.Module):
    """examples/transformer.mg: ids 8 x 128, vocab 1000, d 256 + learned positions, 6 pre-LN
    layers (4 heads x 64 written as matmul + softmax, no mask; FF 1024 with erf GELU), final LN,
    Linear to the vocabulary. q, k, v have no bias, the output projection has one."""

    B, T, V, D, H, DH, FF = 8, 128, 1000, 256, 4, 64, 1024

    def __init__(self):
        super().__init__()
        D = self.D
        self.tok = nn.Embedding(self.V, D)
        self.pos = nn.Parameter(torch.randn(self.T, D) * 0.02)
        self.layers = nn.ModuleList()
        for _ in range(6):
            self.layers.append(nn.ModuleDict(dict(
                ln1=nn.LayerNorm(D), wq=nn.Linear(D, D, bias=False), wk=nn.Linear(D, D, bias=False),
                wv=nn.Linear(D, D, bias=False), wo=nn.Linear(D, D),
                ln2=nn.LayerNorm(D), w1=nn.Linear(D, self.FF), w2=nn.Linear(self.FF, D))))
        self.lnf = nn.LayerNorm(D)
        self.out = nn.Linear(D, self.V)

    def heads(self, x):
        return x.reshape(self.B, self.T, self.H, self.DH).transpose(1, 2)

    # embed, block and head are separate so that bench/torch_checkpoint.py can checkpoint the blocks
    def embed(self, ids):
        return self.tok(ids) + self.pos

    def block(self, l, h):
        x = l["ln1"](h)
        q, k, v = self.heads(l["wq"](x)), self.heads(l["wk"](x)), self.heads(l["wv"](x))
        a = torch.softmax(q @ k.transpose(-1, -2) * 0.125, dim=-1)
        o = (a @ v).transpose(1, 2).reshape(self.B, self.T, self.D)
        h = h + l["wo"](o)
        return h + l["w2"](F.gelu(l["w1"](l["ln2"](h))))

    def head(self, h):
        return self.out(self.lnf(h)).reshape(-1, self.V)

    def forward(self, ids):
        h = self.embed(ids)
        for l in self.layers:
            h = self.block(l, h)
        return self.head(h)


def transformer():
    m = Transformer()
    return m, torch.randint(0, 1000, (8, 128)), torch.randint(0, 1000, (8 * 128,))


class BasicBlock(nn.Module):
    """torchvision's ResNet BasicBlock: two 3x3 conv + BN, 1x1 conv + BN shortcut when the shape changes"""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (x if self.down is None else self.down(x)))


def resnet18_64():
    """torchvision ResNet-18 layout (7x7/2 stem + BN + ReLU + 3x3/2 max-pool, stages 64/128/256/512
    of two BasicBlocks, global average pool, Linear 10) on batch 16 x 3x64x64, BN in training mode"""
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10)]
    return nn.Sequential(*layers), torch.rand(16, 3, 64, 64), torch.randint(0, 10, (16,))


def double_conv(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(), nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU())


class UNetSmall(nn.Module):
    """batch 8 x 1x64x64; down levels 16/32/64 (two 3x3 conv + ReLU, then 2x2 max-pool),
    bottleneck 128, up levels: 2x2 stride-2 conv_transpose, concat the skip, two 3x3 conv + ReLU;
    1x1 conv to 2 classes, per-pixel cross-entropy"""

    def __init__(self):
        super().__init__()
        self.down = nn.ModuleList([double_conv(1, 16), double_conv(16, 32), double_conv(32, 64)])
        self.bottleneck = double_conv(64, 128)
        self.up = nn.ModuleList([nn.ConvTranspose2d(128, 64, 2, 2), nn.ConvTranspose2d(64, 32, 2, 2),
                                 nn.ConvTranspose2d(32, 16, 2, 2)])
        self.dec = nn.ModuleList([double_conv(128, 64), double_conv(64, 32), double_conv(32, 16)])
        self.head = nn.Conv2d(16, 2, 1)

    def forward(self, x):
        skips = []
        for d in self.down:
            x = d(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.bottleneck(x)
        for up, dec, skip in zip(self.up, self.dec, reversed(skips)):
            x = dec(torch.cat([up(x), skip], dim=1))
        return self.head(x)


def unet_small():
    return UNetSmall(), torch.rand(8, 1, 64, 64), torch.randint(0, 2, (8, 64, 64))


MODELS = dict(mlp_deep=mlp_deep, cnn_fmnist=cnn_fmnist, transformer=transformer, resnet18_64=resnet18_64,
              unet_small=unet_small)


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in MODELS:
        sys.exit("usage: torch_models.py MODEL [REPS]; MODEL one of " + ", ".join(MODELS))
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    fmt = sys.argv[3] if len(sys.argv) > 3 else "nchw"
    if fmt not in ("nchw", "channels_last"):
        sys.exit("torch_models.py: FORMAT is nchw or channels_last, not " + fmt)
    torch.manual_seed(0)
    model, x, y = MODELS[sys.argv[1]]()
    model.train()
    if x.dim() == 4:  # a convolutional model: PyTorch must be on its best CPU path, oneDNN
        if not (torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled):
            sys.exit("torch_models.py: torch.backends.mkldnn is not available/enabled")
        if fmt == "channels_last":
            model = model.to(memory_format=torch.channels_last)
            x = x.contiguous(memory_format=torch.channels_last)
    print("params %d" % sum(p.numel() for p in model.parameters()), flush=True)

    def step():
        for p in model.parameters():
            p.grad = None
        loss = F.cross_entropy(model(x), y)  # over the class axis 1, every position for unet
        loss.backward()
        return loss.item()

    step()  # warm-up (oneDNN builds its primitives and caches them here)
    step()
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        step()
        c1, t1 = time.process_time(), time.perf_counter()
        print("step_ms %.3f %.3f" % (1e3 * (t1 - t0), 1e3 * (c1 - c0)), flush=True)


if __name__ == "__main__":
    main()

# examples/resnet18_64.mg cut down to its stem and one BasicBlock, batch 2: a model small enough
# for `--solver exact` to prove its optimum in parts, kept for the bound experiment of
# docs/planner.md ("What the cut bound misses on the residual networks"):
#   memgrad plan bench/models/resnet_stem.mg --budget 50% --micro-batches 2 [--solver exact --time-limit 300]
# conv1 7x7 stride 2 pad 3 -> BatchNorm -> ReLU -> max-pool 3x3 stride 2 pad 1 -> one BasicBlock
# of 64 channels -> global average pool -> Linear 10, cross-entropy; BatchNorm in training mode.
model resnet_stem
const B = 2
input  images: f32[B, 3, 64, 64]
input  labels: i32[B]

def conv(x, c_in, c_out, k, s, p) {
  param w: f32[c_out, c_in, k, k] = he
  return conv2d(x, w, stride=s, pad=p)
}

def bn(x, c) {
  param g: f32[c] = ones
  param b: f32[c] = zeros
  return batch_norm(x, g, b)
}

def block(x, c) {
  h = relu(bn(conv(x, c, c, 3, 1, 1), c))
  h = bn(conv(h, c, c, 3, 1, 1), c)
  return relu(h + x)
}

h = relu(bn(conv(images, 3, 64, 7, 2, 3), 64))            # [B, 64, 32, 32]
h = max_pool2d(h, kernel=3, stride=2, pad=1)               # [B, 64, 16, 16]
h = block(h, 64)
param  fc_w: f32[64, 10] = xavier
param  fc_b: f32[10] = zeros
logits = global_avg_pool(h) @ fc_w + fc_b                  # [B, 10]
loss = cross_entropy(logits, labels)
output logits
minimize loss

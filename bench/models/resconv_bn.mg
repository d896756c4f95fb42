# Ten residual blocks of conv 3x3 -> BatchNorm -> add -> ReLU, 4 channels, batch 4 of 4x8x8: the
# smallest model with resnet18_64's pattern in parts (every block's batch_norm a barrier over all
# parts, forward and backward), kept for docs/planner.md ("A batch-norm stack in parts"):
#   memgrad plan bench/models/resconv_bn.mg --budget 38720 --micro-batches 2 [--solver exact --time-limit 400]
model resconv_bn
const B = 4
const C = 4
input  x: f32[B, C, 8, 8]
input  y: i32[B]

def block(h) {
  param w: f32[C, C, 3, 3] = he
  param g: f32[C] = ones
  param b: f32[C] = zeros
  return relu(h + batch_norm(conv2d(h, w, pad=1), g, b))
}

h = block(block(block(block(block(x)))))
h = block(block(block(block(block(h)))))
param fw: f32[C * 64, 3] = xavier
logits = flatten(h) @ fw
loss = cross_entropy(logits, y)
output logits
minimize loss

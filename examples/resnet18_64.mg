# ResNet-18 in the torchvision layout on 64x64 images: batch 16 x 3x64x64, 10 classes.
# conv1 7x7 stride 2 pad 3 -> BatchNorm -> ReLU -> max-pool 3x3 stride 2 pad 1 -> four stages of
# two BasicBlocks (64, 128, 256, 512 channels; the first block of stages 2-4 has stride 2 and a
# 1x1 stride-2 convolution + BatchNorm on its shortcut) -> global average pool -> Linear 10,
# cross-entropy. Convolutions have no bias (BatchNorm's shift does that job), as in torchvision.
# BatchNorm runs in training mode in resnet18_64_train_step (batch statistics; the running
# statistics in the state blob move once per step) and in inference mode in resnet18_64_forward.
model resnet18_64
const B = 16
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

# BasicBlock with an identity shortcut
def block(x, c) {
  h = relu(bn(conv(x, c, c, 3, 1, 1), c))
  h = bn(conv(h, c, c, 3, 1, 1), c)
  return relu(h + x)
}

# BasicBlock that halves the resolution: stride 2, and a 1x1 stride-2 conv + BN shortcut
def down_block(x, c_in, c_out) {
  h = relu(bn(conv(x, c_in, c_out, 3, 2, 1), c_out))
  h = bn(conv(h, c_out, c_out, 3, 1, 1), c_out)
  return relu(h + bn(conv(x, c_in, c_out, 1, 2, 0), c_out))
}

h = relu(bn(conv(images, 3, 64, 7, 2, 3), 64))            # [B, 64, 32, 32]
h = max_pool2d(h, kernel=3, stride=2, pad=1)               # [B, 64, 16, 16]
h = block(block(h, 64), 64)                                # layer1
h = block(down_block(h, 64, 128), 128)                     # layer2: [B, 128, 8, 8]
h = block(down_block(h, 128, 256), 256)                    # layer3: [B, 256, 4, 4]
h = block(down_block(h, 256, 512), 512)                    # layer4: [B, 512, 2, 2]
param  fc_w: f32[512, 10] = xavier
param  fc_b: f32[10] = zeros
logits = global_avg_pool(h) @ fc_w + fc_b                  # [B, 10]
loss = cross_entropy(logits, labels)
output logits
minimize loss

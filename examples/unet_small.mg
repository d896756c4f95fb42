# A small U-Net for per-pixel segmentation: batch 8 of 1x64x64 images, 2 classes.
# Encoder: 3 levels of two 3x3 pad-1 conv + ReLU (16, 32, 64 channels), each followed by a
# 2x2 max-pool; bottleneck of two 3x3 conv + ReLU at 128 channels. Decoder: 3 levels, each a
# 2x2 stride-2 transposed convolution halving the channels (the "up-conv" of Ronneberger et
# al.), concatenated on the channel axis with the encoder output of the same size (the long
# skips), then two 3x3 conv + ReLU. A 1x1 conv gives 2 class logits per pixel; the loss is the
# cross-entropy over the class axis averaged over every pixel.
model unet_small
const B = 8
const S = 64
const CLASSES = 2
input  x: f32[B, 1, S, S]
input  labels: i32[B, S, S]

# two 3x3 convolutions with ReLU at one resolution
def double_conv(x, c_in, c_out) {
  param w1: f32[c_out, c_in, 3, 3] = he
  param b1: f32[c_out, 1, 1] = zeros
  param w2: f32[c_out, c_out, 3, 3] = he
  param b2: f32[c_out, 1, 1] = zeros
  h = relu(conv2d(x, w1, pad=1) + b1)
  return relu(conv2d(h, w2, pad=1) + b2)
}

# one decoder level: up-conv to twice the size and c_out channels, join the skip, double conv
def up(x, skip, c_in, c_out) {
  param wt: f32[c_in, c_out, 2, 2] = he      # conv_transpose2d weights are [C_in, C_out/groups, kh, kw]
  param bt: f32[c_out, 1, 1] = zeros
  u = conv_transpose2d(x, wt, stride=2) + bt
  return double_conv(concat(u, skip, axis=1), 2 * c_out, c_out)
}

e1 = double_conv(x, 1, 16)                                 # [B, 16, 64, 64]
e2 = double_conv(max_pool2d(e1, kernel=2), 16, 32)         # [B, 32, 32, 32]
e3 = double_conv(max_pool2d(e2, kernel=2), 32, 64)         # [B, 64, 16, 16]
h = double_conv(max_pool2d(e3, kernel=2), 64, 128)         # [B, 128, 8, 8] bottleneck
h = up(h, e3, 128, 64)                                     # [B, 64, 16, 16]
h = up(h, e2, 64, 32)                                      # [B, 32, 32, 32]
h = up(h, e1, 32, 16)                                      # [B, 16, 64, 64]
param  wo: f32[CLASSES, 16, 1, 1] = he
param  bo: f32[CLASSES, 1, 1] = zeros
logits = conv2d(h, wo) + bo                                # [B, 2, 64, 64]
loss = cross_entropy(logits, labels, axis=1)
output logits
minimize loss

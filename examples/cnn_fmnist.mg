# A small convolutional network for Fashion-MNIST: batch 128 of 1x28x28 images,
# conv 3x3 1->32 pad 1 + ReLU + max-pool 2 -> conv 3x3 32->64 pad 1 + ReLU + max-pool 2
# -> flatten 3136 -> Linear 128 + ReLU -> Linear 10, cross-entropy.
model cnn_fmnist
const B  = 128
const C1 = 32
const C2 = 64
const HIDDEN = 128
input  x: f32[B, 1, 28, 28]
input  y: i32[B]
param  w1: f32[C1, 1, 3, 3] = he          # conv weights are [C_out, C_in/groups, kh, kw]
param  b1: f32[C1, 1, 1] = zeros          # broadcasts over H and W
param  w2: f32[C2, C1, 3, 3] = he
param  b2: f32[C2, 1, 1] = zeros
param  w3: f32[C2 * 7 * 7, HIDDEN] = he
param  b3: f32[HIDDEN] = zeros
param  w4: f32[HIDDEN, 10] = he
param  b4: f32[10] = zeros
h = max_pool2d(relu(conv2d(x, w1, pad=1) + b1), kernel=2)   # [B, 32, 14, 14]
h = max_pool2d(relu(conv2d(h, w2, pad=1) + b2), kernel=2)   # [B, 64, 7, 7]
h = relu(flatten(h) @ w3 + b3)                              # [B, 3136] -> [B, 128]
logits = h @ w4 + b4
loss = cross_entropy(logits, y)
output logits
minimize loss

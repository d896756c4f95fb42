# A small decoder-style transformer language model: token ids batch 8 x sequence 128,
# vocabulary 1000, width 256 plus learned positions, 6 pre-LayerNorm layers (4 heads x 64,
# feed-forward 1024 with GELU, residuals), a final LayerNorm, Linear to the vocabulary and
# cross-entropy over every position. Attention is written with matmul and softmax
# (no causal mask).
model transformer
const B = 8
const T = 128
const V = 1000
const D = 256
const H = 4
const DH = 64
const FF = 1024
input  ids: i32[B, T]
input  targets: i32[B, T]
param  tok: f32[V, D] = normal(0.02)
param  pos: f32[T, D] = normal(0.02)

# [B, T, D] -> [B, H, T, DH]
def heads(x) {
  return transpose(reshape(x, shape=[B, T, H, DH]), perm=[0, 2, 1, 3])
}

def attention(x) {
  param g: f32[D] = ones
  param b: f32[D] = zeros
  param wq: f32[D, D] = xavier
  param wk: f32[D, D] = xavier
  param wv: f32[D, D] = xavier
  param wo: f32[D, D] = xavier
  param bo: f32[D] = zeros
  h = layer_norm(x, g, b)
  q = heads(h @ wq)
  k = heads(h @ wk)
  v = heads(h @ wv)
  a = softmax(q @ transpose(k, perm=[0, 1, 3, 2]) * 0.125)   # [B, H, T, T], 1/sqrt(64)
  o = reshape(transpose(a @ v, perm=[0, 2, 1, 3]), shape=[B, T, D])
  return x + o @ wo + bo
}

def feed_forward(x) {
  param g: f32[D] = ones
  param b: f32[D] = zeros
  param w1: f32[D, FF] = he
  param b1: f32[FF] = zeros
  param w2: f32[FF, D] = xavier
  param b2: f32[D] = zeros
  return x + gelu(layer_norm(x, g, b) @ w1 + b1) @ w2 + b2
}

h = embedding(ids, tok) + pos
repeat 6 {
  h = feed_forward(attention(h))
}
param  gf: f32[D] = ones
param  bf: f32[D] = zeros
param  wout: f32[D, V] = xavier
param  bout: f32[V] = zeros
logits = layer_norm(h, gf, bf) @ wout + bout                 # [B, T, V]
loss = cross_entropy(logits, targets)
output logits
minimize loss

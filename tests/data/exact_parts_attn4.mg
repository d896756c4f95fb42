# A step found by a fuzzer (2026-12-06) where --solver exact in parts returned a dearer plan than auto:
# tests/test_planner.c, test_exact_not_dearer_in_parts.
model mattn4
const B = 8
const T = 6
const D = 8
input ids: i32[B, T]
param tok: f32[5, D] = normal(0.02)
input targets: i32[B, T]

def attn(x) {
  param g: f32[D] = ones
  param b: f32[D] = zeros
  param wq: f32[D, D] = xavier
  param wk: f32[D, D] = xavier
  param wv: f32[D, D] = xavier
  param wo: f32[D, D] = xavier
  h = layer_norm(x, g, b)
  q = h @ wq
  k = h @ wk
  v = h @ wv
  a = softmax(q @ transpose(k, perm=[0, 2, 1]) * 0.5, axis=1)
  o = a @ v
  return o @ wo
}

def ff(x) {
  param g: f32[D] = ones
  param b: f32[D] = zeros
  param w1: f32[D, 16] = he
  param b1: f32[16] = zeros
  param w2: f32[16, D] = xavier
  return x + gelu(layer_norm(x, g, b) @ w1 + b1) @ w2
}
h = embedding(ids, tok)
h0 = h
h = ff(h)
h = attn(h)
h = ff(attn(h))
param gf: f32[D] = ones
param bf: f32[D] = zeros
param wout: f32[D, 5] = xavier
logits = layer_norm(h, gf, bf) @ wout
loss = cross_entropy(logits, targets)
output logits
minimize loss

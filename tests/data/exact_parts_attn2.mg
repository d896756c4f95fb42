# A step found by a fuzzer (2026-12-06) where --solver exact in parts returned a dearer plan than auto:
# tests/test_planner.c, test_exact_not_dearer_in_parts.
model mattn2
const B = 8
const T = 6
const D = 4
input ids: i32[B, T]
param tok: f32[5, D] = normal(0.02)
input targets: i32[B]

def attn(x) {
  param g: f32[D] = ones
  param b: f32[D] = zeros
  param wq: f32[D, D] = xavier
  param wk: f32[D, D] = xavier
  param wv: f32[D, D] = xavier
  param wo: f32[D, D] = xavier
  h = x
  q = h @ wq
  k = h @ wk
  v = h @ wv
  a = softmax(q @ transpose(k, perm=[0, 2, 1]) * 0.5, axis=1)
  o = a @ v
  return x + o @ wo
}

def ff(x) {
  param g: f32[D] = ones
  param b: f32[D] = zeros
  param w1: f32[D, 16] = he
  param b1: f32[16] = zeros
  param w2: f32[16, D] = xavier
  return x + relu(layer_norm(x, g, b) @ w1 + b1) @ w2
}
param pos: f32[T, D] = normal(0.02)
h = embedding(ids, tok) + pos
h0 = h
h = attn(h)
h = ff(attn(h))
h = h + h0
h = attn(h)
param gf: f32[D] = ones
param bf: f32[D] = zeros
param wout: f32[D, 3] = xavier
param wflat: f32[24, 3] = xavier
logits = reshape(h, shape=[B, T * D]) @ wflat
loss = cross_entropy(logits, targets)
output logits
output h
minimize loss

# A step found by a fuzzer (2026-12-06) whose plan in 2 parts at 16,064 bytes lands in 16,000,
# while the plan at 16,000 bytes recomputed 19% of a step more (sched_parts.c: a part's cap less
# all the step holds across it). tests/test_planner.c, test_parts_plan_at_its_workspace.
model parts_held_attn
const B = 8
const T = 8
const D = 8
const H = 1
const DH = 8
input x: f32[B, T, D]
input targets: i32[B, T]
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
  a = softmax(q @ transpose(k, perm=[0, 2, 1]) * 0.5)
  o = a @ v
  return x + o @ wo
}
def ff(x) {
  param g: f32[D] = ones
  param b: f32[D] = zeros
  param w1: f32[D, 32] = he
  param b1: f32[32] = zeros
  param w2: f32[32, D] = xavier
  return x + relu(layer_norm(x, g, b) @ w1 + b1) @ w2
}
h = x
h0 = h
h = attn(h)
h = attn(h)
h = ff(h)
h = attn(h)
h = ff(h)
param gf: f32[D] = ones
param bf: f32[D] = zeros
param wout: f32[D, 5] = xavier
logits = layer_norm(h, gf, bf) @ wout
loss = cross_entropy(logits, targets)
output logits
minimize loss

# A step found by a fuzzer (2026-12-06) whose plan in 2 parts at 2,112 bytes executed 63,349 FLOPs where
# the plan at 2,048 executes 60,613 in 2,048 bytes: the part-by-part order (sched_parts.c) missed the
# budget by 128 bytes once placed and cut every part's cap by all of that, where half was enough.
# tests/test_planner.c, test_parts_plan_larger_budget.
model parts_fit_mlp
const B = 12
input x: f32[B, 8]
input y: i32[B]
param w0: f32[8, 8] = he
param b0: f32[8] = zeros
h0 = relu(x @ w0 + b0)
param w1: f32[8, 8] = he
h1 = tanh(h0 @ w1) + h0
param w2: f32[8, 8] = he
h2 = relu(h1 @ w2)
param w3: f32[8, 8] = he
h3 = tanh(h2 @ w3)
param w4: f32[8, 8] = he
h4 = gelu(h3 @ w4)
param w5: f32[8, 8] = he
h5 = gelu(h4 @ w5) * sigmoid(h2) * sigmoid(h0)
param w6: f32[8, 8] = he
h6 = tanh(h5 @ w6) + h0 * sigmoid(h5)
param wo: f32[8, 5] = xavier
logits = (h6 + h0) @ wo
loss = cross_entropy(logits, y)
output logits
minimize loss

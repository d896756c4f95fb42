# A step found by a fuzzer (2026-12-06) whose plan in 2 parts at 3,025 bytes recomputes nothing in a
# 2,944-byte workspace, while the plan at 2,944 bytes recomputed 41% of a step: the part-by-part
# order (sched_parts.c) planned each part under the budget less all the step holds across it,
# more than is live at the part's peak. tests/test_planner.c, test_parts_plan_at_its_workspace.
model parts_held_mlp
const B = 2
input x: f32[B, 6, 24]
input y: i32[B, 6]
param w0: f32[24, 4] = he
param b0: f32[4] = zeros
h0 = relu(x @ w0 + b0)
param w1: f32[4, 4] = he
h1 = sigmoid(h0 @ w1)
param w2: f32[4, 4] = he
h2 = tanh(h1 @ w2) - h0 - h1
param w3: f32[4, 4] = he
h3 = sigmoid(h2 @ w3) - h2 - h0 - h1
param w4: f32[4, 4] = he
h4 = sigmoid(h3 @ w4) - h3 + h1
param w5: f32[4, 4] = he
h5 = relu(h1 @ w5) * sigmoid(h0) * sigmoid(h1)
param w6: f32[4, 4] = he
h6 = gelu(h2 @ w6)
param w7: f32[4, 4] = he
h7 = tanh(h6 @ w7)
param wo: f32[4, 5] = xavier
logits = h7 @ wo
loss = cross_entropy(logits, y)
output logits
minimize loss

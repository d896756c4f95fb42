# A forward pass that must recompute under a budget its training step meets running every op once
# (tests/test_e2e.c, forward_recomputes_as_plan_plans). Found by a search over random graphs and cut
# down op by op (2026-12-07, planner of be3fdd6), keeping what made compile and plan differ.
#
# The loss reads only x2, t2 and w: the training step is a stand-in, 41,024 bytes at store-all and
# at its minimum, a little above the forward pass's minimum (40,960). The output `heat` is the
# forward pass's alone (the step never computes it): a random graph over [2, 4, 16, 16] values of
# 8 KiB, v0 (x upsampled) read at its start and at its very end, with frozen weights k passed as
# an input. Its store-all workspace, 87,616 bytes, is the larger of the two functions' (the one
# percentages refer to).
#
# At 46,000 bytes the step runs every op once, so `compile` leaves its minimum search out, while
# the forward pass recomputes (847,872 FLOPs executed, 489,472 every op once, in 40,960 bytes):
# there planner.c's mg_plan_program solves both functions again with their whole searches, as
# `plan` does. Without that, the forward pass's minimum search ran with no floor (the step's
# minimum, which `plan` gives it and probes first, finding the plan above), met no plan within the
# budget cheaper than the solve's, and compile emitted a forward pass of 45,056 bytes executing
# 901,120 FLOPs. Budgets from about 45,100 to 46,600 bytes showed that difference.
model fwd_floor
input x: f32[2, 4, 8, 8]
input x2: f32[5120]
input t2: f32[5120]
input k: f32[16, 16]
param w: f32[5120] = ones
loss = mse(x2 * w, t2)
v0 = upsample_nearest(x, scale=2)
v1 = v0 @ k
v2 = sigmoid(v1)
v3 = upsample_nearest(avg_pool2d(v0, kernel=2), scale=2)
v4 = v3 @ k
v5 = tanh(v4)
v6 = v5 @ k
v7 = tanh(v6)
v8 = v7 - v4
v9 = v8 + v3
v10 = upsample_nearest(avg_pool2d(v9, kernel=2), scale=2)
v11 = relu(v9)
v12 = v11 * v7
v13 = exp(v12)
v14 = v13 @ k
v15 = tanh(v14)
v16 = relu(v2)
v17 = v16 @ k
v18 = exp(v12)
v19 = exp(v0)
v20 = v19 @ k
v21 = v20 - v17
v22 = v21 + v7
v23 = v22 + v18
v24 = v23 * v15
v25 = relu(v10)
v26 = v12 - v24
v27 = v8 * v26
v28 = v27 * v25
heat = v28 * v0
output heat
minimize loss

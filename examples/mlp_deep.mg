# A deep perceptron: batch 256, 784 -> 16 x (Linear 1024 + ReLU) -> Linear 10, cross-entropy.
# The benchmark model (bench/), and a model deep enough for the planner to matter.
model mlp_deep
input  x: f32[256, 784]
input  y: i32[256]
param  w_in: f32[784, 1024] = he
param  b_in: f32[1024] = zeros
h = relu(x @ w_in + b_in)
repeat 15 {
  param w: f32[1024, 1024] = he
  param b: f32[1024] = zeros
  h = relu(h @ w + b)
}
param  w_out: f32[1024, 10] = he
param  b_out: f32[10] = zeros
logits = h @ w_out + b_out
loss = cross_entropy(logits, y)
output logits
minimize loss

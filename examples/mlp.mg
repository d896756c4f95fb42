# A two-layer perceptron for 28x28 images (Fashion-MNIST): 784 -> 256 -> 10.
model mlp
input  x: f32[128, 784]
input  y: i32[128]
param  w1: f32[784, 256] = he
param  b1: f32[256] = zeros
param  w2: f32[256, 10] = he
param  b2: f32[10] = zeros
h = relu(x @ w1 + b1)
logits = h @ w2 + b2
loss = cross_entropy(logits, y)
output logits
minimize loss

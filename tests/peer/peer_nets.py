"""peer_nets.py: ampscope's nets written in PyTorch (experiments/nets.c, layer by layer),
with the same parameter names (the modules' attribute names), so that a
state_dict and an ampscope checkpoint hold the same tensors.

Layers as ampscope defines them (experiments/layers/): linear is nn.Linear
(y = x W^T + b) on the flattened input; conv2d is nn.Conv2d with a square
kernel, stride 1, no padding; relu; maxpool2 is nn.MaxPool2d(2) (stride 2).
Losses: cross-entropy, the mean over the batch (ak_softmax_xent); MSE, the
mean over every element (ak_mse).
"""
import torch
import torch.nn.functional as F
from torch import nn

# (kind, name, out features or channels, kernel): experiments/nets.c's rows
LENET5 = [("conv2d", "conv1", 6, 5), ("relu", "relu1", 0, 0), ("maxpool2", "pool1", 0, 0),
          ("conv2d", "conv2", 16, 5), ("relu", "relu2", 0, 0), ("maxpool2", "pool2", 0, 0),
          ("linear", "fc1", 120, 0), ("relu", "relu3", 0, 0), ("linear", "fc2", 84, 0),
          ("relu", "relu4", 0, 0), ("linear", "fc3", 10, 0)]
MLP = [("linear", "fc1", 256, 0), ("relu", "relu1", 0, 0), ("linear", "fc2", 256, 0),
       ("relu", "relu2", 0, 0), ("linear", "fc3", 10, 0)]


def simplenet_rows(width, depth, last=0):
    """depth Linear layers of width (the last of `last` outputs if given), ReLU between."""
    rows = []
    for i in range(1, depth + 1):
        rows.append(("linear", "fc%d" % i, last if last and i == depth else width, 0))
        if i < depth:
            rows.append(("relu", "relu%d" % i, 0, 0))
    return rows


class Net(nn.Module):
    """A chain of ampscope's layers on inputs of shape (c, h, w)."""

    def __init__(self, rows, c, h, w, loss):
        super().__init__()
        self.order, self.loss_kind = [], loss
        for kind, name, out, kernel in rows:
            if kind == "conv2d":
                layer = nn.Conv2d(c, out, kernel)
                c, h, w = out, h - kernel + 1, w - kernel + 1
            elif kind == "linear":
                layer = nn.Linear(c * h * w, out)
                c, h, w = out, 1, 1
            elif kind == "relu":
                layer = nn.ReLU()
            elif kind == "maxpool2":
                layer = nn.MaxPool2d(2)
                h, w = h // 2, w // 2
            else:
                raise ValueError("no PyTorch layer for ampscope's " + kind)
            setattr(self, name, layer)
            self.order.append((kind, name))

    def forward(self, x):
        for kind, name in self.order:
            if kind == "linear":
                x = x.flatten(1)
            x = getattr(self, name)(x)
        return x

    def loss(self, out, target):
        if self.loss_kind == "xent":
            return F.cross_entropy(out, target)
        return F.mse_loss(out, target)


def build(name, width=0, depth=0):
    """The net ampscope's --net NAME builds (simplenet with --width, --depth)."""
    if name == "lenet5":
        return Net(LENET5, 1, 32, 32, "xent")
    if name == "mlp":
        return Net(MLP, 784, 1, 1, "xent")
    if name == "simplenet":
        return Net(simplenet_rows(width, depth), width, 1, 1, "mse")
    if name == "deepmlp":
        return Net(simplenet_rows(width or 128, depth or 16, 10), 784, 1, 1, "xent")
    raise ValueError("no PyTorch net for " + name)


def load(net, weights):
    """Loads {name: float32 array} (every parameter, nothing more) into net."""
    state = {k: torch.from_numpy(weights[k]) for k in net.state_dict()}
    net.load_state_dict(state, strict=True)


def gradients(net, x, target):
    """fp32 on the CPU: the loss at x and every parameter's gradient, by name."""
    net.zero_grad(set_to_none=True)
    loss = net.loss(net(torch.from_numpy(x)), torch.from_numpy(target))
    loss.backward()
    grads = {k: p.grad.detach().numpy().copy() for k, p in net.named_parameters()}
    return float(loss.detach()), grads

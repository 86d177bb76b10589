"""peer_nets.py: ampscope's nets written in PyTorch (experiments/nets.c, layer by layer),
with the same parameter names (the modules' attribute names), so that a
state_dict and an ampscope checkpoint hold the same tensors.

Layers as ampscope defines them (experiments/layers/): linear is nn.Linear
(y = x W^T + b) on the flattened input; conv2d is nn.Conv2d with a square
kernel, stride 1, no padding; relu; maxpool2 is nn.MaxPool2d(2) (stride 2).
Losses: cross-entropy, the mean over the batch (ak_softmax_xent); MSE, the
mean over every element (ak_mse).

The graph nets (experiments/nets_resnet.c, nets_transformer.c) as modules of
their own, with torchvision's BasicBlock names (resnet) and nanoGPT's without
its "transformer." prefix (transformer): conv2d with stride, padding k // 2
and bias=False; BatchNorm2d (eps 1e-5, momentum 0.1, train mode: batch
statistics, running mean and unbiased variance updated by the forward;
num_batches_tracked is a buffer ampscope does not keep, left out of the
comparison); global average pooling; LayerNorm (eps 1e-5); the exact GELU;
nn.Embedding for wte and wpe (added); attention's q, k, v as c_attn's
[q of all heads | k | v], S = q k^T / sqrt(D) with the causal mask, softmax,
times v, the heads concatenated; cross-entropy of every position's next
token, the mean over batch * context.
"""
import math

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


class BasicBlock(nn.Module):
    """torchvision's BasicBlock (nets_resnet.c's basic_block)."""

    def __init__(self, c_in, c, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        self.downsample = None
        if stride != 1 or c_in != c:
            self.downsample = nn.Sequential(nn.Conv2d(c_in, c, 1, stride, 0, bias=False),
                                            nn.BatchNorm2d(c))

    def forward(self, x):
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (self.downsample(x) if self.downsample is not None else x))


class ResNet(nn.Module):
    """nets_resnet.c: a 3x3 stem, three stages of depth blocks (width, 2 width,
    4 width channels; stride 2 into stages 2 and 3), average pool, fc."""

    def __init__(self, width, depth, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, width, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        c = width
        for stage in (1, 2, 3):
            blocks = []
            for b in range(depth):
                out = width << (stage - 1)
                blocks.append(BasicBlock(c, out, 2 if stage > 1 and b == 0 else 1))
                c = out
            setattr(self, "layer%d" % stage, nn.Sequential(*blocks))
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(x.mean(dim=(2, 3)))

    def loss(self, out, target):
        return F.cross_entropy(out, target)


class Attention(nn.Module):
    """nanoGPT's CausalSelfAttention without dropout (layers/attention.c)."""

    def __init__(self, c, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(c, 3 * c)
        self.c_proj = nn.Linear(c, c)

    def forward(self, x):
        b, t, c = x.shape
        d = c // self.heads
        q, k, v = (z.view(b, t, self.heads, d).transpose(1, 2)
                   for z in self.c_attn(x).split(c, dim=2))
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        p = F.softmax(s.masked_fill(~mask, float("-inf")), dim=-1)
        return self.c_proj((p @ v).transpose(1, 2).reshape(b, t, c))


class FeedForward(nn.Module):
    """nanoGPT's MLP: c_fc, the exact GELU, c_proj."""

    def __init__(self, c):
        super().__init__()
        self.c_fc = nn.Linear(c, 4 * c)
        self.c_proj = nn.Linear(4 * c, c)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, c, heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c, eps=1e-5)
        self.attn = Attention(c, heads)
        self.ln_2 = nn.LayerNorm(c, eps=1e-5)
        self.mlp = FeedForward(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """nets_transformer.c: wte + wpe, depth pre-LN blocks h.<i>, ln_f, lm_head
    (bias=False); the 98-token vocabulary of the fortunes text (data.h)."""

    def __init__(self, c, depth, heads, context, vocab=98):
        super().__init__()
        self.wte = nn.Embedding(vocab, c)
        self.wpe = nn.Embedding(context, c)
        self.h = nn.ModuleList([Block(c, heads) for _ in range(depth)])
        self.ln_f = nn.LayerNorm(c, eps=1e-5)
        self.lm_head = nn.Linear(c, vocab, bias=False)

    def forward(self, ids):
        x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))

    def loss(self, out, target):
        return F.cross_entropy(out.reshape(-1, out.shape[-1]), target.reshape(-1))


def build(name, width=0, depth=0, heads=0, context=0):
    """The net ampscope's --net NAME builds (with --width, --depth, --heads,
    --context where it takes them; 0: the net's default)."""
    if name == "lenet5":
        return Net(LENET5, 1, 32, 32, "xent")
    if name == "mlp":
        return Net(MLP, 784, 1, 1, "xent")
    if name == "simplenet":
        return Net(simplenet_rows(width, depth), width, 1, 1, "mse")
    if name == "deepmlp":
        return Net(simplenet_rows(width or 128, depth or 16, 10), 784, 1, 1, "xent")
    if name == "resnet":
        return ResNet(width or 16, depth or 1)
    if name == "transformer":
        return GPT(width or 64, depth or 2, heads or 4, context or 64)
    raise ValueError("no PyTorch net for " + name)


def state_names(net):
    """The names ampscope keeps: the state_dict's without BatchNorm's
    num_batches_tracked (momentum 0.1 never reads it)."""
    return [k for k in net.state_dict() if not k.endswith(".num_batches_tracked")]


def load(net, weights):
    """Loads {name: float32 array} (every parameter and buffer ampscope keeps,
    nothing more) into net."""
    state = {k: torch.from_numpy(weights[k]) for k in state_names(net)}
    missing, unexpected = net.load_state_dict(state, strict=False)
    left = [k for k in missing if not k.endswith(".num_batches_tracked")]
    assert not left and not unexpected, "state_dict mismatch: %s %s" % (left, unexpected)


def running_stats(net):
    """BatchNorm's running_mean and running_var, by name (after a forward in
    train mode: updated)."""
    return {k: v.detach().numpy().copy() for k, v in net.state_dict().items()
            if k.endswith(".running_mean") or k.endswith(".running_var")}


def gradients(net, x, target):
    """On the CPU, in net's dtype (fp32, or float64 after net.double()): the
    loss at x and every parameter's gradient, by name (a forward in train
    mode: BatchNorm's running statistics are updated)."""
    net.zero_grad(set_to_none=True)
    dtype = next(net.parameters()).dtype
    x, target = (t.to(dtype) if t.is_floating_point() else t
                 for t in (torch.from_numpy(x), torch.from_numpy(target)))
    loss = net.loss(net(x), target)
    loss.backward()
    grads = {k: p.grad.detach().numpy().copy() for k, p in net.named_parameters()}
    return float(loss.detach()), grads

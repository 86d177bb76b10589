"""peer_ops.py: the layer kinds in no net of `ampscope grad` against PyTorch (fp32 and
float64, CPU): gelu_tanh, dropout, softmax and log_softmax as layers.

  /usr/bin/python3 peer_ops.py --helper PEER_OPS --bound B [--rows N] [--seed S]

The helper (peer_ops.c) computes ampscope's loss and gradients of
    fc1 (Linear 16) GELU(approximate='tanh') Dropout(0.25) fc2 Softmax(-1)
    fc3 LogSoftmax(-1), MSE
on the cpu at its own initialisation, and writes the weights, the batch, the
loss, the gradients and dropout's output; its zeros are the mask, which
PyTorch applies as nn.Dropout does (kept elements scaled by 1 / (1 - p), the
same mask in the backward).  So dropout's scaling and backward are checked,
not its Philox bits.  The loss and every gradient must agree within B
(peer_lib.compare, fp32 or float64), and one changed weight must break it.
"""
import argparse
import copy
import os
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

import peer_lib

P = 0.25
WIDTH = 16


class Ops(nn.Module):
    def __init__(self, mask):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = (nn.Linear(WIDTH, WIDTH) for _ in range(3))
        self.mask = mask

    def forward(self, x):
        h = F.gelu(self.fc1(x), approximate="tanh")
        h = h * self.mask.to(h.dtype) / (1 - P)
        h = F.softmax(self.fc2(h), dim=-1)
        return F.log_softmax(self.fc3(h), dim=-1)


def gradients(net, x, target):
    net.zero_grad(set_to_none=True)
    dtype = net.fc1.weight.dtype
    loss = F.mse_loss(net(torch.from_numpy(x).to(dtype)), torch.from_numpy(target).to(dtype))
    loss.backward()
    return float(loss.detach()), {k: p.grad.detach().numpy().copy()
                                  for k, p in net.named_parameters()}


def compare(what, t, weights, bound, quiet=False):
    """ampscope's loss and gradients in t against PyTorch's at weights."""
    mask = torch.from_numpy(t["drop1.out"] != 0)
    net = Ops(mask)
    net.load_state_dict({k: torch.from_numpy(weights[k]) for k in net.state_dict()})
    net64 = copy.deepcopy(net).double()
    loss32, g32 = gradients(net, t["x"], t["target"])
    loss64, g64 = gradients(net64, t["x"], t["target"])
    ours = {k: t["grad." + k] for k in g32}
    if not quiet:
        print("%s: loss ampscope %.9g, torch %.9g (fp64 %.9g)" % (
            what, float(t["loss"][0]), loss32, loss64))
    ok_l, w_l = peer_lib.compare(what, {"loss": t["loss"][0]}, {"loss": loss32}, bound, quiet,
                                 {"loss": loss64})
    ok_g, w_g = peer_lib.compare(what, ours, g32, bound, quiet, g64)
    return ok_l and ok_g, max(w_l, w_g), g32


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--helper", required=True, help="tests/peer's peer_ops")
    p.add_argument("--bound", type=float, required=True)
    p.add_argument("--rows", type=int, default=64)
    p.add_argument("--seed", type=int, default=3)
    args = p.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="ampscope-peer-ops-") as tmp:
        path = os.path.join(tmp, "ops.safetensors")
        peer_lib.run([args.helper, str(args.seed), str(args.rows), path])
        t = peer_lib.st_read(path)
    dropped = float(np.mean(t["drop1.out"] == 0))
    print("dropout zeroed %.3f of %d elements (p = %.2f)" % (dropped, t["drop1.out"].size, P))
    weights = {k: t[k] for k in t if k.startswith("fc")}
    ok, worst, g32 = compare("ops", t, weights, args.bound)
    # the check must be able to fail: fc3.weight's element of largest gradient, by 1%
    changed = {k: a.copy() for k, a in weights.items()}
    flat = changed["fc3.weight"].reshape(-1)
    k = int(np.argmax(np.abs(g32["fc3.weight"])))
    flat[k] += np.float32(0.01) * np.max(np.abs(flat))
    ok_p, worst_p, _ = compare("perturbed", t, changed, args.bound, True)
    print("self-check: fc3.weight[%d] changed by 1%%: worst rel. error %.3g, %s" % (
        k, worst_p, "NOT detected" if ok_p else "detected"))
    print("peer ops: max relative error %.3g (bound %.0e)" % (worst, args.bound))
    sd = (P * (1 - P) / t["drop1.out"].size) ** 0.5  # the binomial's, as a fraction
    if abs(dropped - P) > 5 * sd:
        sys.exit("FAIL: dropout zeroed %.3f of its elements, not about %.2f" % (dropped, P))
    if not ok:
        sys.exit("FAIL: ampscope's gradients of the ops net differ from PyTorch's")
    if ok_p:
        sys.exit("FAIL: the check did not see a changed weight: it cannot fail")


if __name__ == "__main__":
    main()

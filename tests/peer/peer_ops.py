"""peer_ops.py: the layer kinds in no net of `ampscope grad` against PyTorch (fp32 and
float64, CPU): gelu_tanh, dropout, softmax and log_softmax as layers, and BatchNorm's
running statistics and eval mode.

  /usr/bin/python3 peer_ops.py --helper PEER_OPS --bound B [--rows N] [--seed S]

The helper (peer_ops.c) computes ampscope's loss and gradients of
    fc1 (Linear 16) bn1 (BatchNorm over 16 channels of 1 x 1: BatchNorm1d(16))
    GELU(approximate='tanh') Dropout(0.25) fc2 Softmax(-1) fc3 LogSoftmax(-1), MSE
on the cpu at its own initialisation, and writes the weights, the batch, the
loss, the gradients, bn1's running statistics after that training forward, the
loss of an eval forward with them (BatchNorm normalizing with its running
statistics, dropout off) and dropout's output; its zeros are the mask, which
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
        self.bn1 = nn.BatchNorm1d(WIDTH)
        self.mask = mask

    def forward(self, x):
        h = F.gelu(self.bn1(self.fc1(x)), approximate="tanh")
        if self.training:
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
    # the running statistics start as nn.BatchNorm1d's (0 and 1), as ampscope's
    state = net.state_dict()
    state.update({k: torch.from_numpy(weights[k]) for k in weights})
    net.load_state_dict(state)
    net64 = copy.deepcopy(net).double()
    loss32, g32 = gradients(net, t["x"], t["target"])
    loss64, g64 = gradients(net64, t["x"], t["target"])
    # the training forward updated the running statistics; an eval forward uses them
    stats = ("bn1.running_mean", "bn1.running_var")
    r32 = {k: net.state_dict()[k].numpy().copy() for k in stats}
    r64 = {k: net64.state_dict()[k].numpy().copy() for k in stats}
    ev = {}
    for tag, n in (("32", net), ("64", net64)):
        n.eval()
        with torch.no_grad():
            ev[tag] = float(F.mse_loss(n(torch.from_numpy(t["x"]).to(n.fc1.weight.dtype)),
                                       torch.from_numpy(t["target"]).to(n.fc1.weight.dtype)))
    ours = {k: t["grad." + k] for k in g32}
    # BatchNorm cancels the bias before it: fc1.bias's gradient is zero but for rounding
    # (PyTorch's fp32 and ampscope each leave ~1e-9 noise); it must be negligible against
    # fc1.weight's, not equal to PyTorch's noise
    bias = np.max(np.abs(ours.pop("fc1.bias")))
    g32.pop("fc1.bias")
    g64.pop("fc1.bias")
    ok_b = bias <= bound * np.max(np.abs(g64["fc1.weight"]))
    if not quiet:
        print("  %s    %s fc1.bias (zero before BatchNorm) max |grad| %.3g" % (
            "ok  " if ok_b else "FAIL", what, bias))
    if not quiet:
        print("%s: loss ampscope %.9g, torch %.9g (fp64 %.9g)" % (
            what, float(t["loss"][0]), loss32, loss64))
    ok_l, w_l = peer_lib.compare(what, {"loss": t["loss"][0]}, {"loss": loss32}, bound, quiet,
                                 {"loss": loss64})
    ok_g, w_g = peer_lib.compare(what, ours, g32, bound, quiet, g64)
    ok_r, w_r = peer_lib.compare(what, {k: t[k] for k in stats}, r32, bound, quiet, r64)
    if not quiet:
        print("%s: eval loss ampscope %.9g, torch %.9g (fp64 %.9g)" % (
            what, float(t["eval.loss"][0]), ev["32"], ev["64"]))
    ok_e, w_e = peer_lib.compare(what, {"eval.loss": t["eval.loss"][0]}, {"eval.loss": ev["32"]},
                                 bound, quiet, {"eval.loss": ev["64"]})
    return ok_l and ok_g and ok_r and ok_e and ok_b, max(w_l, w_g, w_r, w_e), g32


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
    weights = {k: t[k] for k in t if k.startswith("fc") or k in ("bn1.weight", "bn1.bias")}
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

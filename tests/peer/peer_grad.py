"""peer_grad.py: `ampscope grad` against PyTorch (fp32, CPU) for one net.

  /usr/bin/python3 peer_grad.py --ampscope BIN --synthetic HELPER --net NET
      [--width W --depth D --heads H --context T] --samples FIRST:COUNT --bound B
      [--dir DIR]

Two sets of weights, both ways across the boundary:
  1. ampscope's: the checkpoint of a 3-step `ampscope train` run, read here;
  2. PyTorch's: the net's default initialisation (torch.manual_seed(7)),
     written here as safetensors under its state_dict names and given to
     `ampscope grad --init` (which proves the naming and the layout).
At each, the loss and every parameter's gradient over the same samples (the
Fashion-MNIST training images FIRST.., read here from the IDX files; the
transformer's windows of the fortunes text, cut here as ampscope cuts them; or
simplenet's synthetic samples, written by the helper exactly as ampscope draws
them) must agree within B relative to the PyTorch tensor's largest magnitude,
and so must BatchNorm's running_mean and running_var after that training
forward (PyTorch updates them in the forward; `ampscope grad --running-stats`).
PyTorch also computes everything in float64, and ampscope may agree with
either (peer_lib.compare): at a kink (a ReLU input a rounding error from zero
flips its mask, seen on resnet) PyTorch's fp32 is the one off the exact answer.
"""
import argparse
import copy
import os
import sys
import tempfile

import numpy as np
import torch

import peer_lib
import peer_nets


def samples_for(args, first, count, workdir):
    """The batch: (x, target) as the net takes them."""
    if args.net == "simplenet":
        path = os.path.join(workdir, "batch.safetensors")
        peer_lib.run([args.synthetic, str(args.width), str(args.seed), str(first), str(count),
                      path])
        t = peer_lib.st_read(path)
        return t["x"], t["target"]
    if args.net == "transformer":
        return peer_lib.fortunes(first, count, args.context or 64)
    return peer_lib.fashion_mnist(first, count, 2 if args.net == "lenet5" else 0)


def ampscope_grad(args, init, workdir, tag, stats):
    """ampscope's loss, gradients and (with stats) running statistics after
    the training forward, at the weights in init."""
    out = os.path.join(workdir, "grad-%s.safetensors" % tag)
    rs = os.path.join(workdir, "running-%s.safetensors" % tag)
    cmd = [args.ampscope, "grad", "--net", args.net, "--init", init, "--samples", args.samples,
           "--out", out, "--backend", "cpu"] + size_options(args)
    stdout = peer_lib.run(cmd + (["--running-stats", rs] if stats else []))
    return peer_lib.grad_loss(stdout), peer_lib.st_read(out), peer_lib.st_read(rs) if stats else {}


def size_options(args):
    """The size options given (simplenet's always, with its seed)."""
    if args.net == "simplenet":
        return ["--width", str(args.width), "--depth", str(args.depth), "--seed", str(args.seed)]
    opts = []
    for name in ("width", "depth", "heads", "context"):
        if getattr(args, name):
            opts += ["--" + name, str(getattr(args, name))]
    return opts


def build(args):
    return peer_nets.build(args.net, args.width, args.depth, args.heads, args.context)


def check(args, what, weights, init, batch, workdir):
    """Compares ampscope at init with PyTorch at weights; (passed, worst error)."""
    net = build(args)
    peer_nets.load(net, weights)
    stats = bool(peer_nets.running_stats(net))
    loss_a, grads_a, stats_a = ampscope_grad(args, init, workdir, what, stats)
    net64 = copy.deepcopy(net).double()
    loss_t, grads_t = peer_nets.gradients(net, *batch)
    loss_64, grads_64 = peer_nets.gradients(net64, *batch)
    print("%s weights: loss ampscope %.9g, torch %.9g (fp64 %.9g)" % (what, loss_a, loss_t,
                                                                      loss_64))
    ok_l, worst_l = peer_lib.compare(what, {"loss": loss_a}, {"loss": loss_t}, args.bound, False,
                                     {"loss": loss_64})
    ok_g, worst_g = peer_lib.compare(what, grads_a, grads_t, args.bound, False, grads_64)
    ok_s, worst_s = peer_lib.compare(what, stats_a, peer_nets.running_stats(net), args.bound,
                                     False, peer_nets.running_stats(net64))
    return (ok_l and ok_g and ok_s, max(worst_l, worst_g, worst_s),
            (loss_a, grads_a, grads_t))


def must_fail(args, weights, batch, ours):
    """PyTorch at weights with one element changed must disagree with ampscope."""
    loss_a, grads_a, grads_t = ours
    last = [n for n in grads_t if n.endswith(".weight")][-1]
    k = int(np.argmax(np.abs(grads_t[last])))
    changed = {n: a.copy() for n, a in weights.items()}
    flat = changed[last].reshape(-1)
    delta = np.float32(0.01) * np.max(np.abs(flat))
    flat[k] += delta
    net = build(args)
    peer_nets.load(net, changed)
    net64 = copy.deepcopy(net).double()
    loss_t, grads_p = peer_nets.gradients(net, *batch)
    loss_64, grads_64 = peer_nets.gradients(net64, *batch)
    ok_l, _ = peer_lib.compare("perturbed", {"loss": loss_a}, {"loss": loss_t}, args.bound, True,
                               {"loss": loss_64})
    ok_g, worst = peer_lib.compare("perturbed", grads_a, grads_p, args.bound, True, grads_64)
    print("self-check: %s[%d] += %.3g in torch's copy: worst rel. error %.3g, %s" % (
        last, k, float(delta), worst, "detected" if not (ok_l and ok_g) else "NOT detected"))
    return not (ok_l and ok_g)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ampscope", required=True)
    p.add_argument("--synthetic", required=True, help="tests/peer's peer_synthetic")
    p.add_argument("--net", required=True)
    p.add_argument("--width", type=int, default=0)
    p.add_argument("--depth", type=int, default=0)
    p.add_argument("--heads", type=int, default=0)
    p.add_argument("--context", type=int, default=0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--samples", required=True)
    p.add_argument("--bound", type=float, required=True)
    p.add_argument("--dir", help="keep the files here (default: a temporary folder)")
    args = p.parse_args()
    torch.set_num_threads(1)
    first, count = (int(v) for v in args.samples.split(":"))
    with tempfile.TemporaryDirectory(prefix="ampscope-peer-") as tmp:
        workdir = args.dir or tmp
        os.makedirs(workdir, exist_ok=True)
        batch = samples_for(args, first, count, workdir)

        # 1. ampscope's weights: a short training run's checkpoint
        run = os.path.join(workdir, "run")
        train = [args.ampscope, "train", "--net", args.net, "--steps", "3", "--no-progress",
                 "--out", run, "--backend", "cpu"] + size_options(args)
        train += ["--batch", "8"] if args.net == "simplenet" else ["--subset", "640"]
        peer_lib.run(train)
        init = os.path.join(run, "checkpoint.safetensors")
        trained = peer_lib.st_read(init)
        ok1, worst1, ours = check(args, "ampscope", trained, init, batch, workdir)

        # 2. PyTorch's weights, saved here, loaded by ampscope
        torch.manual_seed(7)
        net = build(args)
        state = net.state_dict()
        theirs = {k: state[k].detach().numpy().copy() for k in peer_nets.state_names(net)}
        init = os.path.join(workdir, "torch-init.safetensors")
        peer_lib.st_write(init, theirs)
        ok2, worst2, _ = check(args, "torch", theirs, init, batch, workdir)

        failed = must_fail(args, trained, batch, ours)
    worst = max(worst1, worst2)
    print("peer %s: max relative error %.3g (bound %.0e)" % (args.net, worst, args.bound))
    if not (ok1 and ok2):
        sys.exit("FAIL: ampscope's gradients of %s differ from PyTorch's beyond %.0e" % (
            args.net, args.bound))
    if not failed:
        sys.exit("FAIL: the check did not see a changed weight: it cannot fail")


if __name__ == "__main__":
    main()

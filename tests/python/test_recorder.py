"""test_recorder.py: a small PyTorch loop recorded by ampscope_torch.Recorder;
`ampscope report` and `ampscope recommend` must accept the folder (exit 0, their
outputs present), the logs must hold what the loop did (one row per step, the
scale and the skipped step of an overflow the loop provokes), and the folder
rules must hold: the lock (ampscope's own `train` is refused while a Recorder
writes), a foreign non-empty folder refused, overwrite.

On a CPU, Debian's torch 1.13 disables GradScaler (it warns and scales
nothing), so the loop uses fake_scaler.FakeGradScaler: GradScaler's attributes
and update rule in Python."""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

import torch

import ampscope_torch
from ampscope_torch.rundir import RunDirError
from fake_scaler import FakeGradScaler

STEPS = 12
INF_STEP = 5


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 32)
        self.fc3 = torch.nn.Linear(32, 4)

    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


def train(folder, **kw):
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = FakeGradScaler(init_scale=2.0 ** 16, growth_interval=4)
    rec = ampscope_torch.Recorder(model, folder, target="fp16", scaler=scaler, every=3,
                                  optimizer=opt, activations=True, **kw)
    x, y = torch.randn(64, 16), torch.randn(64, 4)
    for step in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        scaled = scaler.scale(loss)
        if step == INF_STEP:
            scaled = scaled * float("inf")  # an overflowing backward: skipped, scale halved
        scaled.backward()
        scaler.step(opt)
        scaler.update()
        rec.step(loss)
        if step % 6 == 5:
            with torch.no_grad():
                test = torch.nn.functional.mse_loss(model(x), y)
            rec.eval(float(test), 0.5, epoch=step // 6)
    return rec


def rows(folder, name):
    with open(os.path.join(folder, name)) as f:
        return list(csv.DictReader(f))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ampscope", required=True)
    a = ap.parse_args()
    failures = []

    def check(ok, what):
        print("%-70s %s" % (what, "ok" if ok else "FAILED"))
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        run = os.path.join(tmp, "run")
        rec = train(run)
        # while it is open, ampscope's train sees the lock
        p = subprocess.run([a.ampscope, "train", "--net", "simplenet", "--steps", "1", "--out", run,
                            "--no-progress"], capture_output=True, text=True)
        check(p.returncode == 2 and ("in use by ampscope train (pid %d)" % os.getpid()) in p.stderr,
              "ampscope train refused while the Recorder holds the lock")
        try:
            ampscope_torch.Recorder(Net(), run)
            check(False, "a second Recorder refused")
        except RunDirError as e:
            check("in use" in str(e), "a second Recorder refused")
        rec.close()
        with open(os.path.join(run, ".ampscope.lock")) as f:
            check(f.read() == "ampscope train %d\n" % os.getpid(), "the lock's text")

        steps = rows(run, "steps.csv")
        check([int(r["step"]) for r in steps] == list(range(STEPS)), "steps.csv: one row a step")
        scales = [float(r["loss_scale"]) for r in steps]
        # 2^16 for 4 clean steps, then 2^17 (step 4), the overflow at 5 halves it
        want = [65536.0] * 4 + [131072.0, 131072.0] + [65536.0] * 4 + [131072.0] * 2
        check(scales == want, "steps.csv: the scale each step used %s" % scales)
        check([int(r["skipped"]) for r in steps] == [int(i == INF_STEP) for i in range(STEPS)],
              "steps.csv: the overflowing step found-inf and skipped")
        trace = rows(run, "trace.csv")
        t5 = trace[INF_STEP]
        check(len(trace) == STEPS and int(t5["nonfinite"]) > 0 and
              int(t5["nonfinite"]) + int(t5["zero"]) == int(t5["count"]) and t5["found_inf"] == "1"
              and all(r["nonfinite"] == "0" for i, r in enumerate(trace) if i != INF_STEP),
              "trace.csv: every step; the overflow's gradients non-finite (or 0: ReLU's)")
        tens = rows(run, "tensors.csv")
        kinds = {(r["layer"], r["kind"]) for r in tens}
        check(kinds == {(l, k) for l in ("fc1", "fc2", "fc3")
                        for k in ("weight", "activation", "weight_grad", "activation_grad")},
              "tensors.csv: every layer and kind")
        check(sorted({int(r["step"]) for r in tens}) == [0, 3, 6, 9], "tensors.csv: every 3 steps")
        wg = [r for r in tens if r["kind"] == "weight_grad" and r["layer"] == "fc1"]
        check(all(int(r["count"]) == 16 * 32 + 32 for r in wg), "tensors.csv: fc1's weight and bias")
        check(all(float(r["scale"]) == want[int(r["step"])] for r in tens if r["kind"].endswith("grad")),
              "tensors.csv: gradients at the step's scale")
        upd = rows(run, "updates.csv")
        check(len(upd) == 12 and all(int(r["nonzero_updates"]) > 0 for r in upd),
              "updates.csv: SGD's updates every 3 steps")
        check(len(rows(run, "eval.csv")) == 2, "eval.csv: two evaluations")
        with open(os.path.join(run, "run.json")) as f:
            info = json.load(f)
        o = info["options"]
        check(o["framework"] == "pytorch" and o["model"] == "Net" and
              o["parameters"] == sum(p.numel() for p in Net().parameters()) and
              o["torch_version"] == torch.__version__ and info["end_time"],
              "run.json: torch version, device, model, parameters, end time")

        out = os.path.join(tmp, "report")
        p = subprocess.run([a.ampscope, "report", run, "--out", out], capture_output=True, text=True)
        print(p.stdout + p.stderr)
        check(p.returncode == 0 and os.path.exists(os.path.join(out, "index.html")),
              "ampscope report accepts the folder (exit 0, index.html)")
        p = subprocess.run([a.ampscope, "recommend", run], capture_output=True, text=True)
        print(p.stdout[-600:] + p.stderr)
        check(p.returncode == 0 and "recommendation: scale_factor" in p.stdout,
              "ampscope recommend accepts the folder (exit 0, a recommendation)")

        # a Recorder's own folder is recorded again; a foreign one is refused
        train(run).close()
        check(len(rows(run, "steps.csv")) == STEPS, "a Recorder's own folder is replaced")
        other = os.path.join(tmp, "other")
        os.mkdir(other)
        with open(os.path.join(other, "notes.txt"), "w") as f:
            f.write("mine\n")
        for overwrite in (False, True):
            try:
                train(other, overwrite=overwrite).close()
                check(False, "a folder with a foreign file refused (overwrite=%s)" % overwrite)
            except RunDirError as e:
                check("notes.txt" in str(e),
                      "a folder with a foreign file refused (overwrite=%s)" % overwrite)
        check(os.listdir(other) in (["notes.txt"], ["notes.txt", ".ampscope.lock"],
                                    [".ampscope.lock", "notes.txt"]),
              "the foreign file is left alone")
        theirs = os.path.join(tmp, "theirs")
        p = subprocess.run([a.ampscope, "train", "--net", "simplenet", "--steps", "1", "--out",
                            theirs, "--no-progress"], capture_output=True, text=True)
        try:
            train(theirs).close()
            check(False, "ampscope train's folder refused without overwrite")
        except RunDirError:
            check(True, "ampscope train's folder refused without overwrite")
        train(theirs, overwrite=True).close()
        check(not os.path.exists(os.path.join(theirs, "checkpoint.safetensors")) and
              len(rows(theirs, "steps.csv")) == STEPS, "overwrite=True replaces it")
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Large-batch training: SGD with the linear scaling rule against LARS and LAMB with warm-up.

Trains fmnist-cnn on Fashion-MNIST (epoch's default data) for the same number of epochs at each
global batch, with
  - sgd:  SGD, momentum 0.9, --lr-scaling linear from --base-batch, no warm-up;
  - lars: LARS (--trust-coefficient), momentum 0.9, --lr-scaling linear, a linear warm-up
          of --warmup-epochs;
  - lamb: LAMB, --lr-scaling sqrt (You et al.'s rule for it), the same warm-up;
both with the poly decay (power 2) to 0, so that the optimizer and the warm-up are the only
differences. Reads each run's metrics.jsonl and writes, under --out: runs.jsonl (one line per
run and epoch), results.md (the table of test accuracy per epoch) and accuracy.svg (the curves).

    python3 bench/large_batch.py --out build/large-batch            # the full experiment
    python3 bench/large_batch.py --out build/lb --epochs 2 --batches 128,8192  # a quick look
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epoch", default=os.path.join(HERE, "..", "build", "epoch"))
    p.add_argument("--out", required=True, help="folder for the runs and the results")
    p.add_argument("--model", default="fmnist-cnn")
    p.add_argument("--data", default="", help="--data for epoch train (default: Fashion-MNIST)")
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--batches", default="128,1024,4096,8192")
    p.add_argument("--base-batch", type=int, default=128)
    p.add_argument("--sgd-lr", type=float, default=0.05, help="SGD's lr at --base-batch")
    p.add_argument("--lars-lr", type=float, default=0.3 / 64,
                   help="LARS's lr at --base-batch (0.3 at 8192)")
    p.add_argument("--lamb-lr", type=float, default=0.02 / 8,
                   help="LAMB's lr at --base-batch (0.02 at 8192)")
    p.add_argument("--warmup-epochs", type=float, default=2.0, help="LARS's and LAMB's warm-up")
    p.add_argument("--trust-coefficient", type=float, default=0.1, help="LARS's eta")
    p.add_argument("--optimizers", default="sgd,lars,lamb")
    p.add_argument("--threads", type=int, default=0, help="0: every core")
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args()


def run_one(args, optimizer, batch):
    run_dir = os.path.join(args.out, "%s-b%d" % (optimizer, batch))
    if os.path.exists(run_dir):
        raise SystemExit("%s exists: choose another --out or remove it" % run_dir)
    lr = {"sgd": args.sgd_lr, "lars": args.lars_lr, "lamb": args.lamb_lr}[optimizer]
    scaling = "sqrt" if optimizer == "lamb" else "linear"
    cmd = [args.epoch, "train", "--model", args.model, "--epochs", str(args.epochs),
           "--batch-size", str(batch), "--optimizer", optimizer, "--lr", str(lr),
           "--lr-scaling", scaling, "--base-batch", str(args.base_batch),
           "--schedule", "poly", "--threads", str(args.threads), "--seed", str(args.seed),
           "--out", run_dir, "--json"]
    if optimizer != "lamb":
        cmd += ["--momentum", "0.9"]
    if optimizer == "lars":
        cmd += ["--trust-coefficient", str(args.trust_coefficient)]
    if optimizer == "sgd":
        cmd += ["--warmup-steps", "0"]
    else:
        cmd += ["--warmup-epochs", str(args.warmup_epochs)]
    if args.data:
        cmd += ["--data", args.data]
    t0 = time.time()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)
    if proc.returncode != 0:
        raise SystemExit("%s failed: %s" % (" ".join(cmd), proc.stderr.strip()[-2000:]))
    accuracies = []
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            m = json.loads(line)
            if m.get("kind") == "epoch":
                accuracies.append(m["test_accuracy"])
    ratio = batch / args.base_batch
    return {"optimizer": optimizer, "batch": batch, "lr_at_base_batch": lr,
            "lr": lr * (ratio ** 0.5 if scaling == "sqrt" else ratio), "epochs": args.epochs,
            "warmup_epochs": args.warmup_epochs if optimizer != "sgd" else 0,
            "trust_coefficient": args.trust_coefficient if optimizer == "lars" else None,
            "test_accuracy": accuracies, "wall_s": round(time.time() - t0, 1),
            "command": " ".join(cmd)}


def write_table(path, results):
    epochs = max(len(r["test_accuracy"]) for r in results)
    with open(path, "w") as f:
        f.write("| optimizer | global batch | lr | " +
                " | ".join("epoch %d" % (e + 1) for e in range(epochs)) + " |\n")
        f.write("|---|---|---|" + "---|" * epochs + "\n")
        for r in results:
            accs = ["%.2f" % (100 * a) for a in r["test_accuracy"]]
            f.write("| %s | %d | %.4g | %s |\n" % (r["optimizer"], r["batch"], r["lr"],
                                                   " | ".join(accs)))


def write_svg(path, results):
    """Test accuracy per epoch, one polyline per run (no plotting library needed)."""
    width, height, left, bottom, top, right = 720, 420, 60, 50, 20, 200
    epochs = max(len(r["test_accuracy"]) for r in results)
    lo = min(min(r["test_accuracy"]) for r in results if r["test_accuracy"])
    lo = max(0.0, int(lo * 20) / 20.0)  # down to a multiple of 5%
    hi = 1.0
    pw, ph = width - left - right, height - top - bottom

    def x(e):
        return left + (pw * (e - 1) / max(1, epochs - 1))

    def y(a):
        return top + ph * (1 - (a - lo) / (hi - lo))

    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
               "#7f7f7f", "#bcbd22", "#17becf"]
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="12">' % (width, height),
           '<rect width="100%" height="100%" fill="white"/>']
    for i in range(int(round((hi - lo) / 0.05)) + 1):
        a = lo + 0.05 * i
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>'
                   % (left, y(a), left + pw, y(a)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%d%%</text>'
                   % (left - 6, y(a) + 4, round(100 * a)))
    for e in range(1, epochs + 1):
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>'
                   % (x(e), top + ph + 18, e))
    out.append('<text x="%.1f" y="%d" text-anchor="middle">epoch</text>'
               % (left + pw / 2, height - 8))
    out.append('<text x="14" y="%.1f" transform="rotate(-90 14 %.1f)" text-anchor="middle">'
               'test accuracy</text>' % (top + ph / 2, top + ph / 2))
    for i, r in enumerate(results):
        c = colours[i % len(colours)]
        dash = {"lars": "", "lamb": ' stroke-dasharray="2 2"'}.get(r["optimizer"],
                                                                   ' stroke-dasharray="6 3"')
        pts = " ".join("%.1f,%.1f" % (x(e + 1), y(a)) for e, a in enumerate(r["test_accuracy"]))
        out.append('<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>'
                   % (c, dash, pts))
        ly = top + 16 * i + 8
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>'
                   % (left + pw + 12, ly, left + pw + 36, ly, c, dash))
        out.append('<text x="%d" y="%d">%s, batch %d</text>'
                   % (left + pw + 42, ly + 4, r["optimizer"], r["batch"]))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    batches = [int(b) for b in args.batches.split(",")]
    optimizers = args.optimizers.split(",")
    results = []
    with open(os.path.join(args.out, "runs.jsonl"), "a") as log:
        for batch in batches:
            for optimizer in optimizers:
                r = run_one(args, optimizer, batch)
                results.append(r)
                log.write(json.dumps(r) + "\n")
                log.flush()
                print("%-4s batch %5d lr %-8.4g accuracy per epoch %s (%.0f s)"
                      % (optimizer, batch, r["lr"],
                         " ".join("%.2f" % (100 * a) for a in r["test_accuracy"]), r["wall_s"]),
                      flush=True)
    write_table(os.path.join(args.out, "results.md"), results)
    write_svg(os.path.join(args.out, "accuracy.svg"), results)
    print("wrote %s/results.md and accuracy.svg" % args.out)


if __name__ == "__main__":
    sys.exit(main())

"""epoch against PyTorch, side by side (BENCHMARKING.md): for each repeat and model, runs
`epoch bench` and bench/reference/train_bench.py through run_torch.sh, alternating the order
(A B, then B A), and prints the medians and the median of the per-pair ratios epoch/torch.
Standard library only. Example:
  python3 bench/compare_epoch.py --threads 2 --repeats 5 --flavours pypi,debian"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "reference"))
import compare  # noqa: E402  (the PyTorch side: batch sizes, heavy models, run_one)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(compare.DEFAULT_BATCH))
    p.add_argument("--flavours", default="pypi", help="PyTorch flavours to compare with")
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int)
    p.add_argument("--steps", type=int)
    p.add_argument("--epoch", default=os.path.join(HERE, "..", "build", "epoch"),
                   help="the epoch binary")
    p.add_argument("--out", help="append every run's JSON line to this file")
    args = p.parse_args()
    args.models = args.models.split(",")
    args.flavours = args.flavours.split(",")
    for m in args.models:
        if m not in compare.DEFAULT_BATCH:
            p.error("unknown model '%s'" % m)
    return args


def run_epoch(model, args):
    heavy = model in compare.HEAVY
    warmup = args.warmup if args.warmup is not None else (3 if heavy else 5)
    steps = args.steps if args.steps is not None else (10 if heavy else 20)
    cmd = [args.epoch, "bench", "--model", model, "--batch-size",
           str(compare.DEFAULT_BATCH[model]), "--threads", str(args.threads),
           "--warmup", str(warmup), "--steps", str(steps), "--json"]
    load_before = os.getloadavg()[0]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)
    if proc.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(cmd), proc.stderr.strip()))
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    r.update({"flavour": "epoch", "load_before": round(load_before, 2),
              "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    return r


def main():
    args = parse_args()
    runs = []
    out = open(args.out, "a") if args.out else None
    sides = ["epoch"] + args.flavours
    for rep in range(args.repeats):
        for model in args.models:
            order = sides if rep % 2 == 0 else list(reversed(sides))
            for side in order:
                r = run_epoch(model, args) if side == "epoch" else compare.run_one(side, model, args)
                r["rep"] = rep
                runs.append(r)
                print("rep %d %-14s %-7s train %8.1f img/s  infer %8.1f img/s  load %.1f"
                      % (rep + 1, model, side, r["train_images_per_s"], r["infer_images_per_s"],
                         r["load_before"]), flush=True)
                if out:
                    out.write(json.dumps(r) + "\n")
                    out.flush()
    print()
    print("| model | batch | side | train img/s | train GFLOP/s | infer img/s |")
    print("|---|---|---|---|---|---|")
    for model in args.models:
        for side in sides:
            rs = [r for r in runs if r["model"] == model and r["flavour"] == side]
            name = side if side == "epoch" else "torch %s (%s)" % (rs[0]["torch_version"], side)
            print("| %s | %d | %s | %.1f | %.1f | %.1f |" % (
                model, compare.DEFAULT_BATCH[model], name,
                statistics.median(r["train_images_per_s"] for r in rs),
                statistics.median(r["train_gflops"] for r in rs),
                statistics.median(r["infer_images_per_s"] for r in rs)))
    print()
    print("| model | " + " | ".join("train epoch/%s | infer epoch/%s" % (f, f)
                                    for f in args.flavours) + " |")
    print("|---|" + "---|---|" * len(args.flavours))
    for model in args.models:
        mine = {r["rep"]: r for r in runs if r["model"] == model and r["flavour"] == "epoch"}
        cells = []
        for f in args.flavours:
            theirs = {r["rep"]: r for r in runs if r["model"] == model and r["flavour"] == f}
            for key in ("train_images_per_s", "infer_images_per_s"):
                cells.append("%.2f" % statistics.median(
                    mine[k][key] / theirs[k][key] for k in mine if k in theirs))
        print("| %s | %s |" % (model, " | ".join(cells)))
    if out:
        out.close()


if __name__ == "__main__":
    sys.exit(main())

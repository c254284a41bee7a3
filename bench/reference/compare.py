"""Runs train_bench.py for the PyPI and Debian PyTorch side by side (BENCHMARKING.md): for each
repeat and model, the flavours alternate (A B, then B A), each run through run_torch.sh; prints
the median of each figure per model and flavour and the median of the per-pair ratios, and
appends every run's JSON line (with the machine's load average) to --out.
Standard library only. Example: bench/reference/compare.py --threads 2 --repeats 3"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# Batch sizes of the reference table (the sources' batch sizes where they have one).
DEFAULT_BATCH = {
    "fmnist-cnn": 64,
    "autoencoder": 256,
    "catdog": 32,
    "catdog-wide": 32,
    "deep-cnn": 32,
    "cifar10-keras": 32,
    "cifar10-tf": 128,
    "alexnet": 32,
    "resnet18": 32,
    "resnet50": 32,
}
# What runs unless --models says otherwise (the ImageNet-size models take minutes each).
SMALL = ["fmnist-cnn", "autoencoder", "catdog", "catdog-wide", "deep-cnn", "cifar10-keras",
         "cifar10-tf"]
# Models whose training step takes seconds on 2 cores get fewer (still >= 10) timed steps.
HEAVY = {"catdog-wide", "deep-cnn", "alexnet", "resnet18", "resnet50"}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(SMALL),
                   help="comma-separated zoo names (default: all)")
    p.add_argument("--flavours", default="pypi,debian", help="run_torch.sh flavours, A,B")
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup", type=int, help="default 5 (3 for heavy models)")
    p.add_argument("--steps", type=int, help="default 20 (10 for heavy models)")
    p.add_argument("--out", help="append every run's JSON line to this file")
    args = p.parse_args()
    args.models = args.models.split(",")
    args.flavours = args.flavours.split(",")
    for m in args.models:
        if m not in DEFAULT_BATCH:
            p.error("unknown model '%s'" % m)
    if args.threads < 1 or args.repeats < 1:
        p.error("--threads and --repeats must be >= 1")
    return args


def run_one(flavour, model, args):
    heavy = model in HEAVY
    warmup = args.warmup if args.warmup is not None else (3 if heavy else 5)
    steps = args.steps if args.steps is not None else (10 if heavy else 20)
    cmd = [os.path.join(HERE, "run_torch.sh"), flavour, os.path.join(HERE, "train_bench.py"),
           "--model", model, "--batch-size", str(DEFAULT_BATCH[model]),
           "--threads", str(args.threads), "--warmup", str(warmup), "--steps", str(steps),
           "--json"]
    load_before = os.getloadavg()[0]
    t0 = time.time()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)
    if proc.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), proc.returncode,
                                                   proc.stderr.strip()[-2000:]))
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result.update({"flavour": flavour, "load_before": round(load_before, 2),
                   "load_after": round(os.getloadavg()[0], 2),
                   "run_s": round(time.time() - t0, 1),
                   # Both unset: PyTorch waits with libgomp's default.
                   "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""),
                   "gomp_spincount": os.environ.get("GOMP_SPINCOUNT", ""),
                   "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    return result


def main():
    args = parse_args()
    runs = []
    out = open(args.out, "a") if args.out else None
    for rep in range(args.repeats):
        for model in args.models:
            order = args.flavours if rep % 2 == 0 else list(reversed(args.flavours))
            for flavour in order:
                r = run_one(flavour, model, args)
                runs.append(r)
                print("rep %d %-14s %-7s train %8.1f img/s %9.2f ms  infer %8.1f img/s  "
                      "load %.1f" % (rep + 1, model, flavour, r["train_images_per_s"],
                                     r["train_step_ms_median"], r["infer_images_per_s"],
                                     r["load_before"]), flush=True)
                if out:
                    out.write(json.dumps(r) + "\n")
                    out.flush()
    if out:
        out.close()

    a, b = args.flavours[0], args.flavours[-1]
    print()
    print("| model | batch | flavour | torch | train img/s | train step ms | infer img/s |"
          " train GFLOP/s |")
    print("|---|---|---|---|---|---|---|---|")
    for model in args.models:
        for flavour in args.flavours:
            rs = [r for r in runs if r["model"] == model and r["flavour"] == flavour]
            med = {k: statistics.median(r[k] for r in rs)
                   for k in ("train_images_per_s", "train_step_ms_median",
                             "infer_images_per_s", "train_gflops")}
            print("| %s | %d | %s | %s | %.1f | %.2f | %.1f | %.1f |"
                  % (model, DEFAULT_BATCH[model], flavour, rs[0]["torch_version"],
                     med["train_images_per_s"], med["train_step_ms_median"],
                     med["infer_images_per_s"], med["train_gflops"]))
    if a != b:
        print()
        print("| model | median train ratio %s/%s | median infer ratio %s/%s |" % (a, b, a, b))
        print("|---|---|---|")
        for model in args.models:
            ra = [r for r in runs if r["model"] == model and r["flavour"] == a]
            rb = [r for r in runs if r["model"] == model and r["flavour"] == b]
            train = statistics.median(x["train_images_per_s"] / y["train_images_per_s"]
                                      for x, y in zip(ra, rb))
            infer = statistics.median(x["infer_images_per_s"] / y["infer_images_per_s"]
                                      for x, y in zip(ra, rb))
            print("| %s | %.2f | %.2f |" % (model, train, infer))


if __name__ == "__main__":
    sys.exit(main())

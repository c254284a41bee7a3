"""epoch against its references, side by side (BENCHMARKING.md): for each repeat and model, runs
`epoch bench` and each reference, alternating the order (A B, then B A), and prints the medians
and the median of the per-pair ratios epoch/reference. A reference flavour is a PyTorch one
(pypi, debian: bench/reference/train_bench.py through run_torch.sh) or keras (Keras 3 on
TensorFlow: bench/reference/keras_bench.py through run_keras.sh, its best of jit_compile off
and on). Standard library only. Examples:
  python3 bench/compare_epoch.py --threads 2 --repeats 5 --flavours pypi,debian
  python3 bench/compare_epoch.py --threads 2 --repeats 3 --models catdog,cifar10-keras \
      --flavours keras --epoch-env ONEDNN_MAX_CPU_ISA=AVX2"""

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
    p.add_argument("--models", default=",".join(compare.SMALL))
    p.add_argument("--flavours", default="pypi",
                   help="references to compare with: pypi, debian (PyTorch), keras")
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int)
    p.add_argument("--steps", type=int)
    p.add_argument("--epoch", default=os.path.join(HERE, "..", "build", "epoch"),
                   help="the epoch binary")
    p.add_argument("--keras-jit", choices=("off", "on", "both"), default="both",
                   help="keras: jit_compile off, on, or both and the faster (default)")
    p.add_argument("--epoch-env", action="append", default=[], metavar="VAR=VALUE",
                   help="set in epoch's environment only (repeatable)")
    p.add_argument("--reference-env", action="append", default=[], metavar="VAR=VALUE",
                   help="set in the references' environment only (repeatable)")
    p.add_argument("--out", help="append every run's JSON line to this file")
    args = p.parse_args()
    args.models = args.models.split(",")
    args.flavours = args.flavours.split(",")
    for m in args.models:
        if m not in compare.DEFAULT_BATCH:
            p.error("unknown model '%s'" % m)
    for f in args.flavours:
        if f not in ("pypi", "debian", "keras"):
            p.error("unknown flavour '%s' (pypi, debian, keras)" % f)
    for name in ("epoch_env", "reference_env"):
        pairs = getattr(args, name)
        if any("=" not in kv or kv.startswith("=") for kv in pairs):
            p.error("--%s takes VAR=VALUE" % name.replace("_", "-"))
        setattr(args, name, dict(kv.split("=", 1) for kv in pairs))
    return args


def with_env(extra):
    """This process's environment plus `extra`, or None (inherit) when there is none."""
    if not extra:
        return None
    env = dict(os.environ)
    env.update(extra)
    return env


def steps_for(model, args):
    heavy = model in compare.HEAVY
    warmup = args.warmup if args.warmup is not None else (3 if heavy else 5)
    steps = args.steps if args.steps is not None else (10 if heavy else 20)
    return warmup, steps


def run_epoch(model, args):
    warmup, steps = steps_for(model, args)
    cmd = [args.epoch, "bench", "--model", model, "--batch-size",
           str(compare.DEFAULT_BATCH[model]), "--threads", str(args.threads),
           "--warmup", str(warmup), "--steps", str(steps), "--json"]
    load_before = os.getloadavg()[0]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env=with_env(args.epoch_env))
    if proc.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(cmd), proc.stderr.strip()))
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    r.update({"flavour": "epoch", "load_before": round(load_before, 2),
              "load_after": round(os.getloadavg()[0], 2), "env": args.epoch_env,
              "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    return r


def run_keras(model, args):
    """One keras_bench.py run through run_keras.sh (the same batch and steps as epoch's)."""
    warmup, steps = steps_for(model, args)
    ref = os.path.join(HERE, "reference")
    cmd = [os.path.join(ref, "run_keras.sh"), os.path.join(ref, "keras_bench.py"),
           "--model", model, "--batch-size", str(compare.DEFAULT_BATCH[model]),
           "--threads", str(args.threads), "--warmup", str(warmup), "--steps", str(steps),
           "--jit-compile", args.keras_jit, "--epoch", args.epoch, "--json"]
    load_before = os.getloadavg()[0]
    t0 = time.time()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env=with_env(args.reference_env))
    if proc.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), proc.returncode,
                                                   proc.stderr.strip()[-2000:]))
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    r.update({"flavour": "keras", "load_before": round(load_before, 2),
              "load_after": round(os.getloadavg()[0], 2), "run_s": round(time.time() - t0, 1),
              "env": args.reference_env, "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    return r


def run_reference(flavour, model, args):
    if flavour == "keras":
        return run_keras(model, args)
    if args.reference_env:
        saved = dict(os.environ)
        os.environ.update(args.reference_env)
        try:
            return compare.run_one(flavour, model, args)
        finally:
            os.environ.clear()
            os.environ.update(saved)
    return compare.run_one(flavour, model, args)


def side_name(side, r):
    if side == "epoch":
        return "epoch"
    if side == "keras":
        return "keras %s, tf %s" % (r["keras_version"], r["tensorflow_version"])
    return "torch %s (%s)" % (r["torch_version"], side)


def main():
    args = parse_args()
    runs = []
    out = open(args.out, "a") if args.out else None
    sides = ["epoch"] + args.flavours
    for rep in range(args.repeats):
        for model in args.models:
            order = sides if rep % 2 == 0 else list(reversed(sides))
            for side in order:
                r = run_epoch(model, args) if side == "epoch" else run_reference(side, model,
                                                                                  args)
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
            name = side_name(side, rs[0])
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
    keras_runs = [r for r in runs if r["flavour"] == "keras"]
    if keras_runs and args.keras_jit == "both":
        print()
        print("Keras, each jit_compile mode alone (medians; the tables above take the faster "
              "per run):")
        print("| model | train img/s, no XLA | train img/s, XLA | infer img/s, no XLA |"
              " infer img/s, XLA |")
        print("|---|---|---|---|---|")
        for model in args.models:
            rs = [r for r in keras_runs if r["model"] == model]
            print("| %s | %s |" % (model, " | ".join(
                "%.1f" % statistics.median(r[k] for r in rs)
                for k in ("train_images_per_s_noxla", "train_images_per_s_xla",
                          "infer_images_per_s_noxla", "infer_images_per_s_xla"))))
    print()
    loads = [r[k] for r in runs for k in ("load_before", "load_after") if k in r]
    print("load average (1 min) around the runs: %.2f-%.2f, median %.2f"
          % (min(loads), max(loads), statistics.median(loads)))
    if out:
        out.close()


if __name__ == "__main__":
    sys.exit(main())

"""Two epoch binaries side by side (BENCHMARKING.md): for each repeat and model, `epoch bench`
of binary A and of binary B, alternating the order (A B, then B A), and the medians and the
median of the per-pair ratios B/A of training images/s (or, with --pipeline DATA, of the input
pipeline's images/s). Standard library only. What a change of the build (say, baseline x86-64
with kernels chosen at run time, against a build for x86-64-v3 throughout) costs or gains:
  python3 bench/compare_binaries.py --a old/epoch --b build/epoch --threads 2 --repeats 5
  python3 bench/compare_binaries.py --a old/epoch --b build/epoch --threads 2 \\
      --env ONEDNN_MAX_CPU_ISA=AVX2 --b-env EPOCH_CPU_ISA=x86-64-v3"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "reference"))
import compare  # noqa: E402  (the zoo's benchmark batch sizes and the heavy models)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--a", required=True, help="the first epoch binary (the baseline)")
    p.add_argument("--b", required=True, help="the second epoch binary")
    p.add_argument("--models", default=",".join(compare.SMALL))
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--steps", type=int, help="timed steps (default: 30, 12 for heavy models)")
    p.add_argument("--pipeline", metavar="DATA",
                   help="time the input pipeline on DATA (epoch bench --pipeline) instead")
    p.add_argument("--env", action="append", default=[], metavar="VAR=VALUE",
                   help="set for both binaries (repeatable)")
    p.add_argument("--a-env", action="append", default=[], metavar="VAR=VALUE")
    p.add_argument("--b-env", action="append", default=[], metavar="VAR=VALUE")
    p.add_argument("--out", help="append every run's JSON line to this file")
    args = p.parse_args()
    args.models = args.models.split(",")
    for m in args.models:
        if m not in compare.DEFAULT_BATCH:
            p.error("unknown model '%s'" % m)
    for name in ("env", "a_env", "b_env"):
        pairs = getattr(args, name)
        if any("=" not in kv or kv.startswith("=") for kv in pairs):
            p.error("--%s takes VAR=VALUE" % name.replace("_", "-"))
        setattr(args, name, dict(kv.split("=", 1) for kv in pairs))
    return args


def run(binary, extra_env, model, args):
    if args.pipeline:
        cmd = [binary, "bench", "--model", model, "--data", args.pipeline, "--pipeline",
               "--threads", str(args.threads), "--json"]
    else:
        steps = args.steps or (12 if model in compare.HEAVY else 30)
        cmd = [binary, "bench", "--model", model, "--batch-size",
               str(compare.DEFAULT_BATCH[model]), "--threads", str(args.threads), "--warmup",
               "3", "--steps", str(steps), "--json"]
    env = dict(os.environ)
    env.update(args.env)
    env.update(extra_env)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(cmd), proc.stderr.strip()))
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    if isinstance(r, list):
        r = r[-1]
    r.update({"binary": binary, "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    return r


def images_per_s(r):
    # a training step's images/s, or the input pipeline's per core (decoding and augmentation)
    for key in ("train_images_per_s", "per_core_per_s"):
        if key in r:
            return float(r[key])
    raise RuntimeError("no images/s in %s" % json.dumps(r)[:300])


def main():
    args = parse_args()
    sides = (("A", args.a, args.a_env), ("B", args.b, args.b_env))
    print("A = %s %s\nB = %s %s\nboth: %s, %d threads, %d alternating pairs" %
          (args.a, args.a_env, args.b, args.b_env, args.env, args.threads, args.repeats))
    print("%-14s %12s %12s %10s" % ("model", "A images/s", "B images/s", "B/A"))
    for model in args.models:
        got = {"A": [], "B": []}
        ratios = []
        for rep in range(args.repeats):
            order = sides if rep % 2 == 0 else sides[::-1]
            pair = {}
            for name, binary, env in order:
                r = run(binary, env, model, args)
                pair[name] = images_per_s(r)
                got[name].append(pair[name])
                if args.out:
                    with open(args.out, "a") as f:
                        f.write(json.dumps(dict(r, side=name, model=model)) + "\n")
            ratios.append(pair["B"] / pair["A"])
        print("%-14s %12.1f %12.1f %10.3f" % (model, statistics.median(got["A"]),
                                              statistics.median(got["B"]),
                                              statistics.median(ratios)), flush=True)


if __name__ == "__main__":
    main()

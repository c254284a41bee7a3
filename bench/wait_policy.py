"""OpenMP wait policies side by side (docs/BENCHMARKS.md, M): runs `epoch bench` for each model
under each candidate setting, rotating the order of the candidates from one repeat to the next,
on idle cores or with --busy background processes spinning on the same cores, and prints the
median training and inference images/s per model and candidate and the median of the per-repeat
ratios to libgomp's default. Standard library only. Example:
  python3 bench/wait_policy.py --threads 2 --repeats 3 --busy 2 --lock /path/to/lockfile"""

import argparse
import contextlib
import fcntl
import json
import os
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = "fmnist-cnn,autoencoder,catdog,cifar10-keras"
# libgomp's own default: GOMP_SPINCOUNT 300000 when neither variable is set (libgomp manual),
# given explicitly so that the binary's own default does not apply.
CANDIDATES = "libgomp,passive,1000,10000,30000,100000,epoch"
POLICY_VARS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "EPOCH_OMP_DEFAULT")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=MODELS)
    p.add_argument("--candidates", default=CANDIDATES,
                   help="libgomp (GOMP_SPINCOUNT=300000), passive, active, a spin count, or "
                        "epoch (nothing set: the binary's default)")
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--busy", type=int, default=0,
                   help="background busy loops running during each measurement")
    p.add_argument("--lock", help="take this file's lock (flock) around each measurement")
    p.add_argument("--epoch", default=os.path.join(HERE, "..", "build", "epoch"))
    p.add_argument("--extra", default="", help="more `epoch bench` flags, e.g. '--steps 50'")
    p.add_argument("--model-extra", action="append", default=[], metavar="MODEL=FLAGS",
                   help="flags for one model, after --extra, e.g. 'autoencoder=--steps 500'")
    p.add_argument("--max-foreign", type=float,
                   help="wait (up to --quiet-wait s) until other work uses at most this many "
                        "cores, and measure again (up to 5 times) when it used more meanwhile")
    p.add_argument("--quiet-wait", type=float, default=900)
    p.add_argument("--out", help="append every run's JSON line to this file")
    args = p.parse_args()
    args.models = args.models.split(",")
    args.model_extra = dict(e.split("=", 1) for e in args.model_extra)
    args.candidates = args.candidates.split(",")
    for c in args.candidates:
        if c not in ("libgomp", "passive", "active", "epoch") and not c.isdigit():
            p.error("unknown candidate '%s'" % c)
    if args.threads < 1 or args.repeats < 1 or args.busy < 0:
        p.error("--threads and --repeats must be >= 1, --busy >= 0")
    return args


def candidate_env(candidate):
    env = {k: v for k, v in os.environ.items() if k not in POLICY_VARS}
    if candidate == "libgomp":
        env["GOMP_SPINCOUNT"] = "300000"
    elif candidate in ("passive", "active"):
        env["OMP_WAIT_POLICY"] = candidate
    elif candidate != "epoch":
        env["GOMP_SPINCOUNT"] = candidate
    return env


def cpu_busy_s():
    """CPU seconds all cores spent since boot on work at normal priority (everything but idle,
    iowait and niced processes), and on niced processes: those yield to the benchmark, which
    runs at nice 0, but each wake-up of a sleeping OpenMP thread has to preempt them."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    hz = os.sysconf("SC_CLK_TCK")
    return (sum(fields[:8]) - fields[1] - fields[3] - fields[4]) / hz, fields[1] / hz


def wait_until_quiet(args):
    """Until other work, niced or not, uses at most --max-foreign cores over 2 s, or
    --quiet-wait s passed."""
    deadline = time.time() + args.quiet_wait
    while True:
        b0 = sum(cpu_busy_s())
        time.sleep(2)
        used = (sum(cpu_busy_s()) - b0) / 2
        if used <= args.max_foreign or time.time() > deadline:
            return used
        time.sleep(8)


def child_cpu_s(pid):
    """Reaps pid and returns the CPU seconds it used."""
    _, _, usage = os.wait4(pid, 0)
    return usage.ru_utime + usage.ru_stime


@contextlib.contextmanager
def measurement_slot(args, slot):
    """The lock (when given) and the background load for one measurement; slot["busy_cpu_s"]
    gets the CPU seconds the background loops used."""
    lock = open(args.lock, "a") if args.lock else None
    if lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
    busy = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(args.busy)]
    try:
        yield
    finally:
        slot["busy_cpu_s"] = 0.0
        for b in busy:
            b.kill()
            slot["busy_cpu_s"] += child_cpu_s(b.pid)
            b.returncode = -9
        if lock:
            lock.close()


def measure(cmd, candidate, args):
    slot = {}
    with measurement_slot(args, slot):
        load_before = os.getloadavg()[0]
        busy0, t0 = cpu_busy_s(), time.time()
        proc = subprocess.Popen(cmd, env=candidate_env(candidate), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, universal_newlines=True)
        out, err = proc.communicate()
        run_s = time.time() - t0
        busy1 = cpu_busy_s()
    normal_s, niced_s = busy1[0] - busy0[0], busy1[1] - busy0[1]
    if proc.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), proc.returncode,
                                                   err.strip()[-2000:]))
    return out, load_before, run_s, normal_s, niced_s, slot["busy_cpu_s"]


def run_one(model, candidate, args):
    cmd = [args.epoch, "bench", "--model", model, "--threads", str(args.threads), "--json"]
    cmd += args.extra.split() + args.model_extra.get(model, "").split()
    for attempt in range(1, 6):
        if args.max_foreign is not None:
            wait_until_quiet(args)
        children0 = os.times()  # the CPU time of reaped children: epoch and the busy loops
        out, load_before, run_s, normal_s, niced_s, busy_cpu_s = measure(cmd, candidate, args)
        children1 = os.times()
        epoch_cpu_s = (children1.children_user - children0.children_user +
                       children1.children_system - children0.children_system) - busy_cpu_s
        foreign = max(0.0, normal_s - epoch_cpu_s - busy_cpu_s) / run_s
        if args.max_foreign is None or foreign + niced_s / run_s <= args.max_foreign:
            break
        print("  (other work used %.2f + %.2f niced cores: measuring again)"
              % (foreign, niced_s / run_s), flush=True)
    r = json.loads(out.strip().splitlines()[-1])
    r.update({"candidate": candidate, "busy": args.busy, "load_before": round(load_before, 2),
              "foreign_cores": round(foreign, 2), "niced_cores": round(niced_s / run_s, 2),
              "attempts": attempt,
              "epoch_cpu_s": round(epoch_cpu_s, 2), "run_s": round(run_s, 1),
              "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    return r


def main():
    args = parse_args()
    # A kill ends the background loops too (measurement_slot's finally).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    runs = []
    out = open(args.out, "a") if args.out else None
    n = len(args.candidates)
    for rep in range(args.repeats):
        for model in args.models:
            order = args.candidates[rep % n:] + args.candidates[:rep % n]
            for candidate in order:
                r = run_one(model, candidate, args)
                r["repeat"] = rep + 1
                runs.append(r)
                print("rep %d %-14s %-8s train %9.1f img/s  infer %9.1f img/s  others %.2f (+%.2f niced) cores  %.0f s"
                      % (rep + 1, model, candidate, r["train_images_per_s"],
                         r["infer_images_per_s"], r["foreign_cores"], r["niced_cores"],
                         r["run_s"]), flush=True)
                if out:
                    out.write(json.dumps(r) + "\n")
                    out.flush()

    base = "libgomp" if "libgomp" in args.candidates else args.candidates[0]
    print()
    print("| model | candidate | train img/s (median) | train / %s | infer img/s (median) |"
          " infer / %s |" % (base, base))
    print("|---|---|---|---|---|---|")
    for model in args.models:
        for candidate in args.candidates:
            rs = [r for r in runs if r["model"] == model and r["candidate"] == candidate]
            bs = {r["repeat"]: r for r in runs if r["model"] == model and r["candidate"] == base}
            train = statistics.median(r["train_images_per_s"] for r in rs)
            infer = statistics.median(r["infer_images_per_s"] for r in rs)
            rt = statistics.median(r["train_images_per_s"] / bs[r["repeat"]]["train_images_per_s"]
                                   for r in rs)
            ri = statistics.median(r["infer_images_per_s"] / bs[r["repeat"]]["infer_images_per_s"]
                                   for r in rs)
            print("| %s | %s | %.0f | %.2f | %.0f | %.2f |" % (model, candidate, train, rt, infer,
                                                               ri))
    if out:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

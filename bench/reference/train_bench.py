"""PyTorch reference training/inference throughput of one zoo model on synthetic in-memory
data (BENCHMARKING.md): W warm-up steps, then S timed steps of forward + loss + backward +
Adam step, and S timed no_grad forwards in eval mode; medians per step, images/s and GFLOP/s
(training = 3 x forward FLOPs). Run through run_torch.sh for the best settings.
Example: run_torch.sh pypi bench/reference/train_bench.py --model catdog --threads 2 --json"""

import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402  (the zoo lives beside this script)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, choices=list(models.ZOO))
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--threads", type=int, required=True,
                   help="torch.set_num_threads (the default here is 1, so always given)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print one JSON line as well")
    args = p.parse_args()
    if args.batch_size < 1 or args.threads < 1 or args.warmup < 0 or args.steps < 1:
        p.error("--batch-size, --threads and --steps must be >= 1, --warmup >= 0")
    return args


def time_steps(step, warmup, steps):
    """Runs step() warmup times untimed, then steps times; per-step seconds."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return times


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)

    model = models.build(args.model)
    loss_fn = models.loss_for(args.model)
    x, y = models.make_batch(args.model, args.batch_size, gen)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    fwd_flops = models.forward_flops(args.model)

    def train_step():
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        # .item() forces completion of the step (and checks it produced a number).
        if not torch.isfinite(loss).item():
            raise RuntimeError("non-finite loss in %s" % args.model)

    def infer_step():
        with torch.no_grad():
            out = model(x)
        out.sum().item()

    model.train()
    train_times = time_steps(train_step, args.warmup, args.steps)
    model.eval()
    infer_times = time_steps(infer_step, args.warmup, args.steps)

    train_s = statistics.median(train_times)
    infer_s = statistics.median(infer_times)
    b = args.batch_size
    result = {
        "framework": "pytorch",
        "torch_version": torch.__version__,
        "model": args.model,
        "batch_size": b,
        "threads": args.threads,
        "train_images_per_s": round(b / train_s, 2),
        "train_step_ms_median": round(train_s * 1e3, 3),
        "infer_images_per_s": round(b / infer_s, 2),
        "train_gflops": round(3 * fwd_flops * b / train_s / 1e9, 2),
        "infer_step_ms_median": round(infer_s * 1e3, 3),
        "infer_gflops": round(fwd_flops * b / infer_s / 1e9, 2),
        "fwd_flops_per_sample": fwd_flops,
        "warmup": args.warmup,
        "steps": args.steps,
        "torch_num_threads": torch.get_num_threads(),
    }
    print("%s  torch %s  batch %d  threads %d  (%d warm-up, %d timed steps)"
          % (args.model, torch.__version__, b, args.threads, args.warmup, args.steps))
    print("  train: median step %.3f ms  %.1f images/s  %.2f GFLOP/s"
          % (train_s * 1e3, result["train_images_per_s"], result["train_gflops"]))
    print("  infer: median step %.3f ms  %.1f images/s  %.2f GFLOP/s"
          % (infer_s * 1e3, result["infer_images_per_s"], result["infer_gflops"]))
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()

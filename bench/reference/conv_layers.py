"""PyTorch side of bench/conv_bench.cpp: forward and forward + backward of the conv layers of
fmnist-cnn and catdog (and one 1x1 layer) at batch 64, NCHW f32, with the same FLOP count
(2 * N * OC * OH * OW * C * KH * KW per pass; backward adds the weight pass and, except for a
first layer, the data pass). Medians over timed repeats; one line per layer and pass.
Example: run_torch.sh pypi bench/reference/conv_layers.py --threads 2"""

import argparse
import statistics
import time

import torch

LAYERS = [  # name, C, H, OC, pad, kernel, first layer (no input gradient)
    ("fmnist_conv1", 1, 28, 32, 1, 3, True),
    ("fmnist_conv2", 32, 14, 64, 1, 3, False),
    ("catdog_conv1", 3, 64, 32, 0, 3, True),
    ("catdog_conv2", 32, 31, 32, 0, 3, False),
    ("pointwise_64_14", 64, 14, 64, 0, 1, False),
]


def median_seconds(fn, min_time):
    for _ in range(3):
        fn()
    times = []
    start = time.perf_counter()
    while time.perf_counter() - start < min_time or len(times) < 5:
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--min-time", type=float, default=0.5, help="seconds per measurement")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    n = args.batch_size
    for name, c, h, oc, pad, k, first in LAYERS:
        conv = torch.nn.Conv2d(c, oc, k, padding=pad)
        x = torch.rand(n, c, h, h) - 0.5
        x.requires_grad_(not first)
        oh = h + 2 * pad - (k - 1)
        dy = torch.rand(n, oc, oh, oh) - 0.5
        flops = 2.0 * n * oc * oh * oh * c * k * k

        def fwd():
            with torch.no_grad():
                conv(x)

        def fwd_bwd():
            conv.zero_grad(set_to_none=True)
            x.grad = None
            conv(x).backward(dy)

        for label, fn, passes in (("fwd", fwd, 1), ("fwd+bwd", fwd_bwd, 2 if first else 3)):
            s = median_seconds(fn, args.min_time)
            print(f"{name:16s} torch {label:8s} {s * 1e3:8.3f} ms  "
                  f"{flops * passes / s / 1e9:7.2f} GFLOP/s")


if __name__ == "__main__":
    main()

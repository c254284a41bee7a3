"""--determinism strict across the zoo: for each model, a short training run at 1, 2 and 3
threads, and from image files (frames for the video models) at 0 and 2 loader workers (final
model tensors compared bit for bit), then its training speed under strict
beside reproducible's (epoch bench, alternating the two, the median of the per-pair ratios
strict/reproducible). Prints a Markdown table (docs/BENCHMARKS.md). Standard library only.
Example:
  python3 bench/strict_determinism.py --epoch build/epoch --threads 2 --repeats 3
  python3 bench/strict_determinism.py --models catdog,resnet18 --bits-only"""

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile

# model: (training samples, training batch of the bit check, bench batch)
MODELS = {
    "fmnist-cnn": (64, 16, 64),
    "autoencoder": (64, 16, 64),
    "catdog": (64, 16, 64),
    "catdog-wide": (32, 8, 32),
    "deep-cnn": (16, 8, 16),
    "cifar10-keras": (64, 16, 64),
    "cifar10-tf": (64, 16, 64),
    "alexnet": (16, 8, 16),
    "alexnet-bn": (16, 8, 16),
    "resnet18": (16, 8, 16),
    "resnet50": (8, 4, 8),
    "prednet": (2, 1, 1),
    "prednet-study": (2, 1, 1),
}
VIDEO = {"prednet", "prednet-study"}


def model_tensors(path):
    """The model.* tensors of a safetensors checkpoint, as raw bytes by name."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    data = blob[8 + n :]
    return {
        k: data[v["data_offsets"][0] : v["data_offsets"][1]]
        for k, v in header.items()
        if k.startswith("model.")
    }


def differing(a, b):
    ta, tb = model_tensors(a), model_tensors(b)
    if ta.keys() != tb.keys():
        return ["(different tensors)"]
    return [k for k in ta if ta[k] != tb[k]]


def train(args, model, threads, out, data, workers=None):
    """Trains under strict on data (a folder, or None: generated samples); the checkpoint."""
    count, batch, _ = MODELS[model]
    cmd = [args.epoch, "train", "--model", model, "--epochs", "1", "--batch-size", str(batch),
           "--threads", str(threads), "--determinism", "strict", "--out", out, "--quiet",
           "--json", "--seed", "7"]
    if data is None:
        cmd += ["--data", "synthetic", "--synthetic-count", str(count), "--limit-test", "16"]
    else:
        cmd += ["--data", data, "--limit-train", str(count), "--limit-test", str(batch)]
    if workers is not None:
        cmd += ["--workers", str(workers)]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{model}: epoch train failed: {run.stderr.strip()[-400:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])["checkpoint"]


def bench(args, model, strict):
    _, _, batch = MODELS[model]
    cmd = [args.epoch, "bench", "--model", model, "--batch-size", str(batch), "--threads",
           str(args.threads), "--json"]
    if batch <= 16:
        cmd += ["--steps", "10", "--warmup", "3"]
    if strict:
        cmd += ["--determinism", "strict"]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{model}: epoch bench failed: {run.stderr.strip()[-400:]}")
    row = json.loads(run.stdout)
    row = row[0] if isinstance(row, list) else row
    return row["train_images_per_s"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epoch", default="build/epoch")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--threads", type=int, default=2, help="threads of the speed figures")
    p.add_argument("--repeats", type=int, default=3, help="alternating pairs per model")
    p.add_argument("--bits-only", action="store_true")
    p.add_argument("--speed-only", action="store_true")
    args = p.parse_args()
    models = args.models.split(",")
    for m in models:
        if m not in MODELS:
            sys.exit(f"unknown model {m} (known: {', '.join(MODELS)})")
    with tempfile.TemporaryDirectory() as tmp:
        video_dir = os.path.join(tmp, "video")
        image_dir = os.path.join(tmp, "images")
        if not args.speed_only:
            if any(m in VIDEO for m in models):
                subprocess.run([args.epoch, "data", "synth", "--kind", "video", "--out",
                                video_dir, "--sequences", "2", "--val-sequences", "1",
                                "--frames", "40"], check=True, capture_output=True)
            if any(m not in VIDEO for m in models):
                # 2 classes (catdog's), PNGs that every recipe resizes and augments
                subprocess.run([args.epoch, "data", "synth", "--kind", "imagenet", "--classes",
                                "2", "--size", "72x72", "--count", "64", "--val-count", "16",
                                "--out", image_dir], check=True, capture_output=True)
        print("| model | batch (bits) | 1 vs 2 threads | 1 vs 3 threads | 0 vs 2 workers | "
              "batch (speed) | reproducible img/s | strict img/s | strict / reproducible |")
        print("|---|---|---|---|---|---|---|---|---|")

        def verdict(a, b):
            diff = differing(a, b)
            return "identical" if not diff else f"{len(diff)} tensors differ"

        for m in models:
            bits = ["", "", ""]
            if not args.speed_only:
                generated = video_dir if m in VIDEO else None
                ckpt = {t: train(args, m, t, os.path.join(tmp, f"{m}-{t}"), generated)
                        for t in (1, 2, 3)}
                files = video_dir if m in VIDEO else image_dir
                by_workers = [train(args, m, 2, os.path.join(tmp, f"{m}-w{w}"), files, w)
                              for w in (0, 2)]
                bits = [verdict(ckpt[1], ckpt[2]), verdict(ckpt[1], ckpt[3]),
                        verdict(*by_workers)]
            speed = ["", "", ""]
            if not args.bits_only:
                rep, strict, ratios = [], [], []
                for r in range(args.repeats):  # A B, then B A
                    order = [False, True] if r % 2 == 0 else [True, False]
                    got = {s: bench(args, m, s) for s in order}
                    rep.append(got[False])
                    strict.append(got[True])
                    ratios.append(got[True] / got[False])
                speed = [f"{statistics.median(rep):.1f}", f"{statistics.median(strict):.1f}",
                         f"{statistics.median(ratios):.2f}"]
            count, batch, bench_batch = MODELS[m]
            print(f"| {m} | {batch} | {bits[0]} | {bits[1]} | {bits[2]} | {bench_batch} | "
                  f"{speed[0]} | {speed[1]} | {speed[2]} |", flush=True)


if __name__ == "__main__":
    main()

"""PyTorch reference of epoch's default run: fmnist-cnn trained on Fashion-MNIST with epoch's
default recipe (Adam lr 2e-3, a linear warm-up over min(300, 10% of the steps) from 0, then
per-step cosine decay to 0 over the rest of the run, batch 32, 3 epochs,
inputs x/255, no augmentation, seed 0, the last partial batch kept), test accuracy after each
epoch, and the wall time (training + evaluations so far) at which it first reached 91.0%.
Example: run_torch.sh pypi bench/reference/fmnist_train.py --threads 2 --json"""

import argparse
import gzip
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402  (the zoo lives beside this script)

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist
TARGET_ACCURACY = 0.91


def read_idx(path):
    """An IDX file (gzip-compressed or not) as a uint8 numpy array of its shape."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4:
        raise ValueError("%s: too short for an IDX header" % path)
    zero, dtype_code, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype_code != 0x08:
        raise ValueError("%s: not an unsigned-byte IDX file" % path)
    dims = struct.unpack(">%dI" % ndim, data[4:4 + 4 * ndim])
    body = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(dims)):
        raise ValueError("%s: %d bytes of data for shape %s" % (path, body.size, dims))
    return body.reshape(dims)


def find(data_dir, stem):
    for name in (stem + ".gz", stem):
        path = os.path.join(data_dir, name)
        if os.path.exists(path):
            return path
    raise FileNotFoundError("%s(.gz) not found in %s" % (stem, data_dir))


def load_split(data_dir, prefix):
    images = read_idx(find(data_dir, prefix + "-images-idx3-ubyte"))
    labels = read_idx(find(data_dir, prefix + "-labels-idx1-ubyte"))
    if images.shape[0] != labels.shape[0] or images.shape[1:] != (28, 28):
        raise ValueError("%s: images %s and labels %s do not match"
                         % (prefix, images.shape, labels.shape))
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)  # (N, 1, 28, 28)
    y = torch.from_numpy(labels.astype(np.int64))                         # (N,)
    return x, y


def evaluate(model, x, y, batch_size):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, x.shape[0], batch_size):
            pred = model(x[i:i + batch_size]).argmax(dim=1)
            correct += (pred == y[i:i + batch_size]).sum().item()
    model.train()
    return correct / x.shape[0]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("data_dir", nargs="?", default=DEFAULT_DATA,
                   help="folder with the four Fashion-MNIST IDX files (default: %(default)s)")
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--warmup-steps", type=int, default=-1,
                   help="default: min(300, 10%% of the steps)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-batch-size", type=int, default=1000)
    p.add_argument("--json", action="store_true", help="print a final JSON line as well")
    args = p.parse_args()
    if min(args.threads, args.epochs, args.batch_size, args.eval_batch_size) < 1:
        p.error("--threads, --epochs, --batch-size and --eval-batch-size must be >= 1")
    return args


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    x_train, y_train = load_split(args.data_dir, "train")
    x_test, y_test = load_split(args.data_dir, "t10k")

    model = models.build("fmnist-cnn")
    loss_fn = models.loss_for("fmnist-cnn")
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    n = x_train.shape[0]
    steps_per_epoch = -(-n // args.batch_size)
    total_steps = steps_per_epoch * args.epochs
    warmup = args.warmup_steps if args.warmup_steps >= 0 else min(300, total_steps // 10)
    shuffle_gen = torch.Generator().manual_seed(args.seed)

    print("fmnist-cnn on Fashion-MNIST  torch %s  threads %d  batch %d  epochs %d  "
          "Adam lr %g, warm-up %d steps, cosine -> 0 over %d steps"
          % (torch.__version__, args.threads, args.batch_size, args.epochs, args.lr,
             warmup, total_steps))
    epochs = []
    time_to_target = None
    step = 0
    t_start = time.perf_counter()
    train_seconds = 0.0
    for epoch in range(1, args.epochs + 1):
        model.train()
        t_epoch = time.perf_counter()
        order = torch.randperm(n, generator=shuffle_gen)
        loss_sum = 0.0
        for b in range(steps_per_epoch):
            idx = order[b * args.batch_size:(b + 1) * args.batch_size]
            # lr of this step: linear warm-up from 0, then cosine to 0 after the last step
            # (epoch's schedule: optim/schedule.h).
            if step < warmup:
                lr = args.lr * step / warmup
            else:
                lr = 0.5 * args.lr * (1.0 + math.cos(math.pi * (step - warmup) /
                                                     (total_steps - warmup)))
            for group in optimizer.param_groups:
                group["lr"] = lr
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(x_train[idx]), y_train[idx])
            loss.backward()
            optimizer.step()
            loss_sum += loss.item()
            step += 1
        train_seconds += time.perf_counter() - t_epoch
        accuracy = evaluate(model, x_test, y_test, args.eval_batch_size)
        wall = time.perf_counter() - t_start
        if time_to_target is None and accuracy >= TARGET_ACCURACY:
            time_to_target = wall
        epochs.append({"epoch": epoch, "train_loss": round(loss_sum / steps_per_epoch, 5),
                       "test_accuracy": accuracy, "wall_s": round(wall, 2),
                       "train_s": round(train_seconds, 2)})
        print("epoch %d  train loss %.4f  test accuracy %.4f  wall %.1f s  (training %.1f s,"
              " %.0f images/s)" % (epoch, loss_sum / steps_per_epoch, accuracy, wall,
                                   train_seconds, n * epoch / train_seconds))
    if time_to_target is None:
        print("test accuracy never reached %.1f%%" % (100 * TARGET_ACCURACY))
    else:
        print("test accuracy first reached %.1f%% at %.1f s (wall, evaluated after each epoch)"
              % (100 * TARGET_ACCURACY, time_to_target))
    if args.json:
        print(json.dumps({
            "framework": "pytorch", "torch_version": torch.__version__,
            "model": "fmnist-cnn", "dataset": "fashion-mnist", "threads": args.threads,
            "batch_size": args.batch_size, "epochs": args.epochs, "lr": args.lr,
            "seed": args.seed, "final_test_accuracy": epochs[-1]["test_accuracy"],
            "wall_s": epochs[-1]["wall_s"], "train_s": epochs[-1]["train_s"],
            "time_to_91_s": None if time_to_target is None else round(time_to_target, 2),
            "per_epoch": epochs}))


if __name__ == "__main__":
    main()

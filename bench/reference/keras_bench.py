"""Keras 3 (TensorFlow, CPU) reference training/inference throughput of one zoo model on
synthetic in-memory data, the protocol of train_bench.py (BENCHMARKING.md): W warm-up steps,
then S timed steps of Keras' compiled training step (train_on_batch: forward + loss + backward
+ Adam update) and S timed inference batches (predict_on_batch); medians per step, images/s
and GFLOP/s (training = 3 x forward FLOPs). The models are MODELS.md's, channels_last (Keras'
default on the CPU); their parameter counts and FLOPs are checked against `epoch models`.
--jit-compile both times Keras' default (no XLA on the CPU) and XLA in one process and reports
the faster of the two as the main figures. Run through run_keras.sh.
Example: run_keras.sh bench/reference/keras_bench.py --model catdog --threads 2 --json"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# name -> (input shape per sample, channels_last, loss kind); the kinds as in models.py:
#   "ce": softmax cross-entropy on logits, integer labels of 10 classes
#   "bce": binary cross-entropy on the pre-sigmoid output, 0/1 labels
#   "mse": mean squared error of the sigmoid output against the input itself
ZOO = {
    "fmnist-cnn": ((28, 28, 1), "ce"),
    "autoencoder": ((784,), "mse"),
    "catdog": ((64, 64, 3), "bce"),
    "catdog-wide": ((128, 128, 3), "bce"),
    "deep-cnn": ((64, 64, 3), "bce"),
    "cifar10-keras": ((32, 32, 3), "ce"),
    "cifar10-tf": ((24, 24, 3), "ce"),
}
NUM_CLASSES = 10


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=list(ZOO))
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--threads", type=int,
                   help="TensorFlow intra-op threads (inter-op: 1), OMP_NUM_THREADS")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jit-compile", choices=("off", "on", "both"), default="both",
                   help="XLA for the compiled steps: off (Keras' default on the CPU), on, or "
                        "both, reporting the faster as the main figures (default)")
    p.add_argument("--epoch", default=os.environ.get("EPOCH_BIN",
                                                     os.path.join(REPO, "build", "epoch")),
                   help="epoch binary whose `models --json` the model is checked against")
    p.add_argument("--summary", action="store_true",
                   help="print parameter counts and forward FLOPs per sample, then exit")
    p.add_argument("--json", action="store_true", help="print one JSON line as well")
    args = p.parse_args()
    if not args.summary and (args.model is None or args.threads is None):
        p.error("--model and --threads are required (or --summary)")
    if args.batch_size < 1 or (args.threads is not None and args.threads < 1) \
            or args.warmup < 0 or args.steps < 1:
        p.error("--batch-size, --threads and --steps must be >= 1, --warmup >= 0")
    return args


def set_thread_env(threads):
    """Thread settings that TensorFlow and its oneDNN read once, at import or first use."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["TF_NUM_INTRAOP_THREADS"] = str(threads)
    os.environ["TF_NUM_INTEROP_THREADS"] = "1"
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def build(name, keras, tf):
    """The zoo model `name` in Keras, channels_last, Keras' default initialization."""
    L = keras.layers

    class TfLrn(L.Layer):
        """TensorFlow's LRN over channels (MODELS.md: radius 4, bias 1, alpha 0.001/9,
        beta 0.75)."""

        def call(self, x):
            return tf.nn.local_response_normalization(x, depth_radius=4, bias=1.0,
                                                      alpha=0.001 / 9, beta=0.75)

    def conv(filters, k, same):
        return L.Conv2D(filters, k, padding="same" if same else "valid", activation="relu")

    shape = ZOO[name][0]
    if name == "fmnist-cnn":
        layers = [conv(32, 3, True), L.MaxPooling2D(2), conv(64, 3, True), L.MaxPooling2D(2),
                  L.Flatten(), L.Dense(128, activation="relu"), L.Dense(NUM_CLASSES)]
    elif name == "autoencoder":
        layers = [L.Dense(256, activation="relu"), L.Dense(64, activation="relu"),
                  L.Dense(256, activation="relu"), L.Dense(784, activation="sigmoid")]
    elif name == "catdog":
        # The final "Dense 1 sigmoid": the sigmoid lives in the loss (from_logits).
        layers = [conv(32, 3, False), L.MaxPooling2D(2),     # 62 -> 31
                  conv(32, 3, False), L.MaxPooling2D(2),     # 29 -> 14
                  L.Flatten(),                               # 14 x 14 x 32 = 6272
                  L.Dense(128, activation="relu"), L.Dense(1)]
    elif name == "catdog-wide":
        layers = []
        for _ in range(4):                                   # 128 -> 63 -> 30 -> 14 -> 6
            layers += [conv(64, 3, False), L.MaxPooling2D(2)]
        layers += [L.Flatten(), L.Dense(128, activation="relu"), L.Dropout(0.5), L.Dense(1)]
    elif name == "deep-cnn":
        layers = []
        for i in range(32):
            layers.append(conv(64, 3, True))
            if (i + 1) % 8 == 0:                             # 64 -> 32 -> 16 -> 8 -> 4
                layers.append(L.MaxPooling2D(2))
        layers += [L.Flatten(), L.Dense(128, activation="relu"), L.Dense(1)]
    elif name == "cifar10-keras":
        layers = [conv(32, 3, True), conv(32, 3, False),    # 32 -> 30
                  L.MaxPooling2D(2), L.Dropout(0.25),        # 15
                  conv(64, 3, True), conv(64, 3, False),     # 15 -> 13
                  L.MaxPooling2D(2), L.Dropout(0.25),        # 6
                  L.Flatten(),                               # 6 x 6 x 64 = 2304
                  L.Dense(512, activation="relu"), L.Dropout(0.5), L.Dense(NUM_CLASSES)]
    elif name == "cifar10-tf":
        layers = [conv(64, 5, True),
                  L.MaxPooling2D(3, strides=2, padding="same"),  # 24 -> 12
                  TfLrn(),
                  conv(64, 5, True),
                  TfLrn(),
                  L.MaxPooling2D(3, strides=2, padding="same"),  # 12 -> 6
                  L.Flatten(),                                   # 2304
                  L.Dense(384, activation="relu"), L.Dense(192, activation="relu"),
                  L.Dense(NUM_CLASSES)]
    else:
        raise ValueError("unknown model '%s'" % name)
    return keras.Sequential([keras.Input(shape)] + layers, name=name.replace("-", "_"))


def loss_for(name, keras):
    kind = ZOO[name][1]
    if kind == "ce":
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    if kind == "bce":
        return keras.losses.BinaryCrossentropy(from_logits=True)
    return keras.losses.MeanSquaredError()


def make_batch(name, batch_size, seed, tf):
    """Synthetic (input, target) as TensorFlow tensors held in memory: inputs uniform in
    [0, 1); random classes, random 0/1 labels, or the input itself."""
    import numpy as np
    rng = np.random.default_rng(seed)
    shape, kind = ZOO[name]
    x = rng.random((batch_size,) + shape, dtype=np.float32)
    if kind == "ce":
        y = rng.integers(0, NUM_CLASSES, (batch_size,)).astype(np.int32)
    elif kind == "bce":
        y = rng.integers(0, 2, (batch_size, 1)).astype(np.float32)
    else:
        y = x
    return tf.constant(x), tf.constant(y)


def forward_flops(model, keras):
    """Forward FLOPs per sample: 2 x multiply-adds of the conv and dense layers, as
    `epoch models` and models.py count them."""
    macs = 0
    for layer in model.layers:
        if isinstance(layer, keras.layers.Conv2D):
            kh, kw = layer.kernel_size
            in_ch = layer.kernel.shape[2]
            out = layer.output.shape                         # (None, OH, OW, OC)
            macs += out[1] * out[2] * out[3] * in_ch * kh * kw
        elif isinstance(layer, keras.layers.Dense):
            macs += layer.kernel.shape[0] * layer.kernel.shape[1]
    return 2 * macs


def epoch_zoo(binary):
    """{name: entry} from `epoch models --json`, or None when the binary is not there."""
    if not binary or not os.path.exists(binary):
        return None
    out = subprocess.run([binary, "models", "--json"], stdout=subprocess.PIPE, check=True,
                         universal_newlines=True).stdout
    return {m["name"]: m for m in json.loads(out)}


def check_against_epoch(name, params, flops, zoo):
    """Raises when the Keras model's parameter count or FLOPs differ from epoch's."""
    if zoo is None:
        return "not checked (no epoch binary)"
    mine = zoo[name]
    if mine["parameters"] != params or mine["forward_flops_per_sample"] != flops:
        raise SystemExit("keras_bench: %s differs from `epoch models`: parameters %d vs %d, "
                         "forward FLOPs %d vs %d" % (name, params, mine["parameters"], flops,
                                                     mine["forward_flops_per_sample"]))
    return "equal to `epoch models`"


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


def bench_mode(args, jit, keras, tf, x, y):
    """Median training and inference step seconds with jit_compile=jit (a fresh model)."""
    import numpy as np
    keras.utils.set_random_seed(args.seed)
    model = build(args.model, keras, tf)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-3),
                  loss=loss_for(args.model, keras), jit_compile=jit)

    def train_step():
        # train_on_batch returns the loss as a number: the step has completed.
        loss = model.train_on_batch(x, y)
        if not np.isfinite(loss):
            raise RuntimeError("non-finite loss in %s" % args.model)

    def infer_step():
        out = model.predict_on_batch(x)                      # a NumPy array: completed
        float(out.sum())

    # Dropout is active in train_on_batch and inactive in predict_on_batch.
    train_s = statistics.median(time_steps(train_step, args.warmup, args.steps))
    infer_s = statistics.median(time_steps(infer_step, args.warmup, args.steps))
    return model, train_s, infer_s


def onednn_state(tf):
    """Whether TensorFlow's oneDNN custom ops are on (TF_ENABLE_ONEDNN_OPTS, default on)."""
    try:
        from tensorflow.python.util import _pywrap_util_port
        return bool(_pywrap_util_port.IsMklEnabled())
    except (ImportError, AttributeError):
        return os.environ.get("TF_ENABLE_ONEDNN_OPTS", "1") not in ("0", "false", "False")


def summary(zoo):
    import keras
    import tensorflow as tf
    print("%-14s %-12s %-5s %12s %16s  %s" % ("model", "input", "loss", "parameters",
                                              "fwd FLOPs/sample", "against epoch"))
    for name, (shape, kind) in ZOO.items():
        model = build(name, keras, tf)
        params, flops = model.count_params(), forward_flops(model, keras)
        print("%-14s %-12s %-5s %12d %16d  %s" % (
            name, "x".join(str(d) for d in shape), kind, params, flops,
            check_against_epoch(name, params, flops, zoo)))


def main():
    args = parse_args()
    set_thread_env(args.threads or 1)
    zoo = epoch_zoo(args.epoch)
    if args.summary:
        summary(zoo)
        return
    import keras
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    if keras.config.image_data_format() != "channels_last":
        raise SystemExit("keras_bench: image_data_format is %s; the reference is channels_last"
                         % keras.config.image_data_format())

    x, y = make_batch(args.model, args.batch_size, args.seed, tf)
    modes = {"off": [False], "on": [True], "both": [False, True]}[args.jit_compile]
    timed = {}
    for jit in modes:
        model, train_s, infer_s = bench_mode(args, jit, keras, tf, x, y)
        timed[jit] = (train_s, infer_s)
    params, fwd_flops = model.count_params(), forward_flops(model, keras)
    check = check_against_epoch(args.model, params, fwd_flops, zoo)

    b = args.batch_size
    # The main figures: the faster mode, chosen separately for training and inference.
    best_train = min(timed, key=lambda j: timed[j][0])
    best_infer = min(timed, key=lambda j: timed[j][1])
    train_s, infer_s = timed[best_train][0], timed[best_infer][1]
    result = {
        "framework": "keras",
        "keras_version": keras.__version__,
        "tensorflow_version": tf.__version__,
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
        "parameters": params,
        "warmup": args.warmup,
        "steps": args.steps,
        "train_jit_compile": best_train,
        "infer_jit_compile": best_infer,
        "tf_intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
        "tf_inter_op_threads": tf.config.threading.get_inter_op_parallelism_threads(),
        "tf_onednn_opts": onednn_state(tf),
        "onednn_max_cpu_isa": os.environ.get("ONEDNN_MAX_CPU_ISA", ""),
        "data_format": keras.config.image_data_format(),
    }
    for jit, (t, i) in timed.items():
        tag = "xla" if jit else "noxla"
        result["train_images_per_s_" + tag] = round(b / t, 2)
        result["infer_images_per_s_" + tag] = round(b / i, 2)

    print("%s  keras %s  tensorflow %s  batch %d  threads %d  (%d warm-up, %d timed steps)"
          % (args.model, keras.__version__, tf.__version__, b, args.threads, args.warmup,
             args.steps))
    print("  parameters %d, forward FLOPs/sample %d: %s" % (params, fwd_flops, check))
    for jit, (t, i) in timed.items():
        print("  jit_compile=%-5s train: median step %.3f ms  %.1f images/s  %.2f GFLOP/s;"
              "  infer: %.3f ms  %.1f images/s" % (jit, t * 1e3, b / t,
                                                    3 * fwd_flops * b / t / 1e9, i * 1e3, b / i))
    print("  best: train %.1f images/s (jit_compile=%s), infer %.1f images/s (jit_compile=%s)"
          % (result["train_images_per_s"], best_train, result["infer_images_per_s"],
             best_infer))
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()

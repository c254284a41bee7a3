"""Random Keras 3 models against epoch: builds models Keras itself writes (Functional graphs with
Add/Concatenate, Sequential stacks; Conv2D with strides, dilation, groups and both paddings,
SeparableConv2D and DepthwiseConv2D,
pools, BatchNormalization, the activation layers, ZeroPadding2D, Rescaling, Dropout, L2, several
initializers, losses and optimizers), saves each as to_json() and some as .keras, and checks that
`epoch models --show FILE --json` gives Keras's count_params() and output_shape, and (with
--train) that `epoch train --model FILE --data synthetic` lowers the loss over 4 epochs.

Development tooling, not part of the build or of make test:
    scripts/setup-keras.sh
    .venv-keras/bin/python tests/models/keras/check_random_models.py build/epoch --seed 1 --count 40 [--train]
Exits non-zero naming each model that differs.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras  # noqa: E402
from keras import layers  # noqa: E402

ACTS = ["relu", "sigmoid", "tanh", "linear", "elu", "leaky_relu", "hard_sigmoid", "selu", "swish",
        "relu6", None]


def conv_block(rng, x):
    kind = rng.choice(["conv", "conv", "conv", "pool", "bn", "act", "drop", "pad", "sep", "dw"])
    h = x.shape[1]
    if kind == "conv":
        k = rng.choice([1, 2, 3, 5])
        s = rng.choice([1, 1, 2])
        d = 1 if s > 1 else rng.choice([1, 1, 2])
        pad = rng.choice(["same", "valid"])
        if pad == "valid" and h - (k - 1) * d < 2:
            pad = "same"
        g = 2 if x.shape[-1] % 2 == 0 and rng.random() < 0.2 else 1
        return layers.Conv2D(rng.choice([4, 6, 8, 12]) * g, k, strides=s, dilation_rate=d,
                             padding=pad, groups=g, activation=rng.choice(ACTS),
                             use_bias=rng.random() < 0.8,
                             kernel_initializer=rng.choice(["glorot_uniform", "he_normal",
                                                            "lecun_uniform", "random_normal"]))(x)
    if kind in ("sep", "dw"):
        k, dm = rng.choice([1, 3]), rng.choice([1, 2])
        pad = "same" if h < 4 else rng.choice(["same", "valid"])
        init = rng.choice(["glorot_uniform", "he_normal", "lecun_uniform"])
        if kind == "sep":
            return layers.SeparableConv2D(rng.choice([8, 12]), k, strides=rng.choice([1, 2]),
                                          padding=pad, depth_multiplier=dm,
                                          activation=rng.choice(ACTS),
                                          depthwise_initializer=init)(x)
        return layers.DepthwiseConv2D(k, padding=pad, depth_multiplier=dm,
                                      activation=rng.choice(ACTS), depthwise_initializer=init)(x)
    if kind == "pool" and h >= 4:
        pool = rng.choice([layers.MaxPooling2D, layers.AveragePooling2D])
        return pool(rng.choice([2, 3]), strides=rng.choice([None, 1, 2]),
                    padding=rng.choice(["valid", "same"]))(x)
    if kind == "bn":
        return layers.BatchNormalization(momentum=rng.choice([0.99, 0.9]),
                                         epsilon=rng.choice([1e-3, 1e-5]))(x)
    if kind == "act":
        return rng.choice([layers.ReLU(), layers.LeakyReLU(negative_slope=0.2), layers.ELU(),
                           layers.Activation("tanh"), layers.ReLU(max_value=6.0)])(x)
    if kind == "drop":
        return layers.Dropout(rng.choice([0.1, 0.5]))(x)
    if kind == "pad":
        return layers.ZeroPadding2D(rng.choice([1, (1, 2), ((0, 1), (2, 0))]))(x)
    return layers.Conv2D(x.shape[-1], 3, padding="same")(x)


def functional(rng, i):
    hw = rng.choice([(17, 17), (32, 32), (28, 28), (24, 40), (31, 20)])
    inp = keras.Input(hw + (rng.choice([1, 3, 4]),))
    x = layers.Rescaling(1.0 / 255)(inp) if rng.random() < 0.4 else inp
    for _ in range(rng.randint(2, 6)):
        if rng.random() < 0.25:
            a = layers.Conv2D(8, 3, padding="same", activation="relu")(x)
            b = layers.Conv2D(8, 1, padding="same")(x)
            x = (layers.Add() if rng.random() < 0.5 else layers.Concatenate())([a, b])
        else:
            x = conv_block(rng, x)
    x = rng.choice([layers.Flatten(), layers.GlobalAveragePooling2D(),
                    layers.GlobalMaxPooling2D()])(x)
    if rng.random() < 0.6:
        l2 = keras.regularizers.L2(1e-4) if rng.random() < 0.3 else None
        x = layers.Dense(rng.choice([16, 32]), activation=rng.choice(["relu", "tanh", "elu", None]),
                         kernel_regularizer=l2)(x)
        if rng.random() < 0.5:
            x = layers.Dropout(0.3)(x)
    task = rng.choice(["binary", "sparse", "categorical", "logits"])
    if task == "binary":
        out, loss = layers.Dense(1, activation="sigmoid")(x), "binary_crossentropy"
    elif task == "sparse":
        out, loss = layers.Dense(5, activation="softmax")(x), "sparse_categorical_crossentropy"
    elif task == "categorical":
        out, loss = layers.Dense(4, activation="softmax")(x), "categorical_crossentropy"
    else:
        out = layers.Dense(3)(x)
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    m = keras.Model(inp, out, name=f"gen{i}")
    m.compile(optimizer=rng.choice(["adam", "sgd", "rmsprop", keras.optimizers.Adam(1e-3),
                                    keras.optimizers.SGD(0.01, momentum=0.9)]),
              loss=loss, metrics=["accuracy"])
    return m


def sequential(rng, i):
    m = keras.Sequential(name=f"seq{i}")
    m.add(keras.Input((rng.choice([28, 32, 64]),) * 2 + (rng.choice([1, 3]),)))
    for _ in range(rng.randint(1, 3)):
        m.add(layers.Conv2D(rng.choice([8, 16, 32]), 3, activation="relu"))
        m.add(layers.MaxPooling2D(2))
    m.add(layers.Flatten())
    m.add(layers.Dropout(0.5))
    m.add(layers.Dense(1, activation="sigmoid"))
    m.compile(optimizer="rmsprop", loss="binary_crossentropy", metrics=["accuracy"])
    return m


def main():
    p = argparse.ArgumentParser()
    p.add_argument("epoch")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--count", type=int, default=40)
    p.add_argument("--train", action="store_true")
    a = p.parse_args()
    rng = random.Random(a.seed)
    work = tempfile.mkdtemp(prefix="epoch-keras-")
    bad = []
    try:
        for i in range(a.count):
            m = functional(rng, i) if i % 4 else sequential(rng, i)
            files = [os.path.join(work, m.name + ".json")]
            with open(files[0], "w") as f:
                f.write(m.to_json())
            if i % 3 == 0:
                files.append(os.path.join(work, m.name + ".keras"))
                m.save(files[-1])
            for path in files:
                r = subprocess.run([a.epoch, "models", "--show", path, "--json"],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    bad.append(f"{path}: {r.stderr.strip()}")
                    continue
                j = json.loads(r.stdout)
                if (j["parameters"], j["output_shape"]) != (m.count_params(),
                                                            list(m.output_shape)):
                    bad.append(f"{path}: epoch {j['parameters']} {j['output_shape']}, Keras "
                               f"{m.count_params()} {list(m.output_shape)}")
            if a.train:
                out = os.path.join(work, m.name + "-run")
                r = subprocess.run([a.epoch, "train", "--model", files[0], "--data", "synthetic",
                                    "--synthetic-count", "128", "--batch-size", "16", "--epochs",
                                    "4", "--quiet", "--out", out], capture_output=True, text=True)
                if r.returncode != 0:
                    bad.append(f"{files[0]} (train): {r.stderr.strip()[-300:]}")
                    continue
                with open(os.path.join(out, "metrics.jsonl")) as f:
                    records = [json.loads(line) for line in f]
                losses = [r["train_loss"] for r in records if r.get("kind") == "epoch"]
                if len(losses) < 2 or not losses[-1] < losses[0]:
                    bad.append(f"{files[0]} (train): epoch losses {losses} do not fall")
        for b in bad:
            print(b)
        print(f"{a.count} models (seed {a.seed}): {len(bad)} differ")
        return 1 if bad else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

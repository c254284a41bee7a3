"""Writes the Keras model files the model-file tests read, with Keras 3 itself, and expected.json:
each model's count_params() and output_shape as Keras reports them; and
tests/optim/keras_optimizers.json: three updates of Keras's Adam, AdamW and RMSprop.

Usage (development tooling, not part of the build):
    scripts/setup-keras.sh && .venv-keras/bin/python tests/models/keras/make_fixtures.py
The files are committed; run again only to change them.
"""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def catdog():
    """The cats-vs-dogs tutorial's network, as its users write it in Keras 3."""
    m = keras.Sequential([
        keras.Input((64, 64, 3)),
        layers.Rescaling(1.0 / 255),
        layers.Conv2D(32, 3, activation="relu"),
        layers.MaxPooling2D(),
        layers.Conv2D(32, 3, activation="relu"),
        layers.MaxPooling2D(),
        layers.Flatten(),
        layers.Dense(128, activation="relu"),
        layers.Dense(1, activation="sigmoid"),
    ], name="catdog")
    m.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    return m


def catdog_changed():
    """The tutorial after a user's changes: 128x128, a third conv/pool pair, 64 filters, dropout."""
    m = keras.Sequential([
        keras.Input((128, 128, 3)),
        layers.Rescaling(1.0 / 255),
        layers.Conv2D(64, 3, activation="relu"),
        layers.MaxPooling2D(),
        layers.Conv2D(64, 3, activation="relu"),
        layers.MaxPooling2D(),
        layers.Conv2D(64, 3, activation="relu"),
        layers.MaxPooling2D(),
        layers.Flatten(),
        layers.Dense(128, activation="relu"),
        layers.Dropout(0.5),
        layers.Dense(1, activation="sigmoid"),
    ], name="catdog_changed")
    m.compile(optimizer=keras.optimizers.RMSprop(1e-4), loss="binary_crossentropy")
    return m


def cifar10_keras():
    """Keras's cifar10_cnn example (MODELS.md's cifar10-keras)."""
    m = keras.Sequential([
        keras.Input((32, 32, 3)),
        layers.Conv2D(32, 3, padding="same", activation="relu"),
        layers.Conv2D(32, 3, activation="relu"),
        layers.MaxPooling2D(2),
        layers.Dropout(0.25),
        layers.Conv2D(64, 3, padding="same", activation="relu"),
        layers.Conv2D(64, 3, activation="relu"),
        layers.MaxPooling2D(2),
        layers.Dropout(0.25),
        layers.Flatten(),
        layers.Dense(512, activation="relu"),
        layers.Dropout(0.5),
        layers.Dense(10, activation="softmax"),
    ], name="cifar10_keras")
    m.compile(optimizer=keras.optimizers.RMSprop(learning_rate=1e-4),
              loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return m


def residual():
    """A Functional model: stride-2 "same" convolutions, batch norm, a residual Add, a
    Concatenate, global pooling."""
    i = keras.Input((32, 32, 3))
    x = layers.Conv2D(16, 3, strides=2, padding="same", use_bias=False)(i)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)
    y = layers.Conv2D(16, 3, padding="same", kernel_regularizer=keras.regularizers.L2(1e-4))(x)
    y = layers.BatchNormalization(momentum=0.9, epsilon=1e-5)(y)
    y = layers.ReLU()(y)
    y = layers.Conv2D(16, 3, padding="same", kernel_regularizer=keras.regularizers.L2(1e-4))(y)
    s = layers.Add()([x, y])
    s = layers.Activation("relu")(s)
    b = layers.Conv2D(8, 1)(s)
    c = layers.Concatenate()([s, b])
    c = layers.MaxPooling2D(3, strides=2, padding="same")(c)
    g = layers.GlobalAveragePooling2D()(c)
    o = layers.Dense(5, activation="softmax")(g)
    m = keras.Model(i, o, name="residual")
    m.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9),
              loss="sparse_categorical_crossentropy")
    return m


def odd_layers():
    """Every other layer and activation epoch reads: dilation, groups, ZeroPadding2D, average
    pooling ("same"), global max pooling, leaky ReLU, hard sigmoid, tanh."""
    i = keras.Input((20, 20, 4))
    x = layers.ZeroPadding2D(((1, 2), (0, 1)))(i)
    x = layers.Conv2D(8, 3, dilation_rate=2, activation="tanh")(x)
    x = layers.Conv2D(8, 3, groups=2, padding="same", activation="hard_sigmoid")(x)
    x = layers.LeakyReLU(negative_slope=0.1)(x)
    x = layers.AveragePooling2D(3, strides=2, padding="same")(x)
    x = layers.Conv2D(6, (2, 4), strides=(1, 2), padding="same", activation="leaky_relu")(x)
    x = layers.GlobalMaxPooling2D()(x)
    x = layers.Dense(3)(x)
    m = keras.Model(i, x, name="odd_layers")
    m.compile(optimizer="adam",
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def activations():
    """The activation layers and functions side by side on one input, without weights, so the
    forward pass can be compared with Keras's own output (expected.json "forward")."""
    i = keras.Input((7,))
    outs = [layers.ELU(alpha=0.5)(i), layers.Activation("elu")(i), layers.Activation("selu")(i),
            layers.Activation("swish")(i), layers.Activation("silu")(i),
            layers.ReLU(max_value=6.0)(i), layers.Activation("relu6")(i),
            layers.Activation("hard_sigmoid")(i), layers.LeakyReLU(negative_slope=0.1)(i),
            layers.Activation("leaky_relu")(i), layers.Activation("tanh")(i),
            layers.Activation("sigmoid")(i), layers.ReLU()(i), layers.Activation("linear")(i)]
    m = keras.Model(i, layers.Concatenate()(outs), name="activations")
    m.compile(optimizer="adam",
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def separable():
    """Keras's current cats-vs-dogs tutorial in small: Rescaling, a strided Conv2D, batch norm,
    SeparableConv2D blocks with a strided 1x1 residual, "same" max pooling, DepthwiseConv2D,
    global average pooling, dropout and a logit."""
    i = keras.Input((40, 40, 3))
    x = layers.Rescaling(1.0 / 255)(i)
    x = layers.Conv2D(16, 3, strides=2, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)
    previous = x
    for size in (24, 32):
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same", depth_multiplier=2,
                                   pointwise_initializer="he_normal")(x)
        x = layers.BatchNormalization()(x)
        x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
        residual = layers.Conv2D(size, 1, strides=2, padding="same")(previous)
        x = layers.add([x, residual])
        previous = x
    x = layers.DepthwiseConv2D(3, depth_multiplier=3, strides=2, padding="same",
                               activation="relu")(x)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dropout(0.25)(x)
    o = layers.Dense(1)(x)
    m = keras.Model(i, o, name="separable")
    m.compile(optimizer=keras.optimizers.Adam(3e-4),
              loss=keras.losses.BinaryCrossentropy(from_logits=True))
    return m


def autoencoder():
    """MODELS.md's autoencoder on flat 784-vectors, as Keras writes it."""
    m = keras.Sequential([
        keras.Input((784,)),
        layers.Dense(256, activation="relu"),
        layers.Dense(64, activation="relu"),
        layers.Dense(256, activation="relu"),
        layers.Dense(784, activation="sigmoid"),
    ], name="autoencoder")
    m.compile(optimizer="adam", loss="mse")
    return m


def keras2(model_json):
    """The same model as Keras 2 (tf.keras 2.x) writes it: batch_input_shape, inbound nodes as
    lists of [layer, node, tensor, kwargs], dtypes as strings, no module or registered_name, and
    no compile_config (Keras 2's to_json() leaves it out)."""
    def strip(v):
        if isinstance(v, dict):
            if v.get("class_name") == "DTypePolicy":
                return v["config"]["name"]
            out = {k: strip(x) for k, x in v.items()
                   if k not in ("module", "registered_name", "build_config", "compile_config")}
            if "batch_shape" in out:
                out["batch_input_shape"] = out.pop("batch_shape")
            if "inbound_nodes" in out:
                out["inbound_nodes"] = [[[t["config"]["keras_history"][0], 0, 0, {}]
                                         for t in flat(node["args"])]
                                        for node in v["inbound_nodes"]]
            return out
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v

    def flat(args):
        for a in args:
            if isinstance(a, list):
                yield from flat(a)
            elif isinstance(a, dict) and a.get("class_name") == "__keras_tensor__":
                yield a

    j = strip(json.loads(model_json))
    cfg = j["config"]
    for key in ("input_layers", "output_layers"):
        if key in cfg and cfg[key] and isinstance(cfg[key][0], str):
            cfg[key] = [cfg[key]]
    if j["class_name"] == "Functional":
        j["class_name"] = "Model"
    j["keras_version"] = "2.15.0"
    j["backend"] = "tensorflow"
    return json.dumps(j)


def optimizer_steps():
    """Three updates of Keras's own optimizers on one variable with fixed gradients (the
    optimizer tests' kStart and kGrads), epsilon large enough to show where Keras adds it."""
    start = [1.0, -2.0, 0.5]
    grads = [[0.5, -1.0, 2.0], [0.25, 2.0, -0.5], [-1.0, 0.5, 1.5]]
    made = {
        "adam": keras.optimizers.Adam(0.1, beta_1=0.9, beta_2=0.999, epsilon=0.1),
        "adamw": keras.optimizers.AdamW(0.1, weight_decay=0.1, epsilon=0.1),
        "rmsprop": keras.optimizers.RMSprop(0.01, rho=0.9, epsilon=0.1),
        "rmsprop_centered": keras.optimizers.RMSprop(0.01, rho=0.9, epsilon=0.1, centered=True),
    }
    out = {"start": start, "grads": grads}
    for name, opt in made.items():
        v = keras.Variable(np.array(start, dtype="float32"))
        steps = []
        for g in grads:
            opt.apply_gradients([(np.array(g, dtype="float32"), v)])
            steps.append(v.numpy().tolist())
        out[name] = {"config": {k: opt.get_config()[k] for k in
                                ("learning_rate", "epsilon", "weight_decay", "beta_1", "beta_2",
                                 "rho", "centered") if k in opt.get_config()},
                     "steps": steps}
    return out


def main():
    expected = {}
    for make in (catdog, catdog_changed, cifar10_keras, residual, odd_layers, autoencoder,
                 activations, separable):
        m = make()
        name = make.__name__
        with open(os.path.join(HERE, name + ".json"), "w") as f:
            f.write(m.to_json())
        expected[name] = {"count_params": m.count_params(),
                          "output_shape": list(m.output_shape),
                          "layer_output_shapes": {l.name: list(l.output.shape)
                                                  for l in m.layers}}
    x = np.array([[-8.0, -2.5, -0.4, 0.0, 0.3, 2.0, 9.0]], dtype="float32")
    expected["activations"]["forward"] = {"input": x[0].tolist(),
                                          "output": activations()(x).numpy()[0].tolist()}
    # Keras 2's form of three of them (the same counts; the task from the output layer).
    for make in (catdog, residual, odd_layers):
        with open(os.path.join(HERE, make.__name__ + "_keras2.json"), "w") as f:
            f.write(keras2(make().to_json()))
    # One model as a .keras archive (config.json beside the weights, uncompressed).
    residual().save(os.path.join(HERE, "residual.keras"))
    # ... and its config.json alone, deflated, as a user's zip tool might write it.
    import zipfile
    with zipfile.ZipFile(os.path.join(HERE, "residual.keras")) as z:
        config = z.read("config.json")
    with zipfile.ZipFile(os.path.join(HERE, "residual_deflated.keras"), "w",
                         compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("config.json", config)
    with open(os.path.join(HERE, "..", "..", "optim", "keras_optimizers.json"), "w") as f:
        json.dump({"keras_version": keras.__version__, **optimizer_steps()}, f, indent=1)
        f.write("\n")
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump({"keras_version": keras.__version__, "models": expected}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()

"""The epoch model zoo (docs: MODELS.md) written in PyTorch, layer for layer, as the reference
that epoch's speed and accuracy are compared against. `build(name)` gives a model, `loss_for`
its loss, `make_batch` synthetic inputs; `python3 models.py --summary` prints parameter counts
and forward FLOPs per sample (multiply-adds x 2 of the conv and dense layers).
Works with PyTorch 1.13 (Debian) and current PyPI releases."""

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class TfSameMaxPool(nn.Module):
    """TensorFlow's "SAME" max-pool: pads max(0, (ceil(H/s)-1)*s + k - H) in total, the smaller
    half before and the larger after, with -inf, then pools without padding. For the 3x3
    stride 2 pool of cifar10-tf on 24x24 (and 12x12) that is 0 before and 1 after."""

    def __init__(self, kernel_size, stride):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride

    @staticmethod
    def _pads(size, k, s):
        out = -(-size // s)
        total = max(0, (out - 1) * s + k - size)
        return total // 2, total - total // 2

    def forward(self, x):
        top, bottom = self._pads(x.shape[-2], self.kernel_size, self.stride)
        left, right = self._pads(x.shape[-1], self.kernel_size, self.stride)
        if top or bottom or left or right:
            x = F.pad(x, (left, right, top, bottom), value=-math.inf)
        return F.max_pool2d(x, self.kernel_size, self.stride)


def _conv_relu(in_ch, out_ch, k, same):
    return [nn.Conv2d(in_ch, out_ch, k, padding=k // 2 if same else 0), nn.ReLU(inplace=True)]


def fmnist_cnn():
    return nn.Sequential(
        *_conv_relu(1, 32, 3, True), nn.MaxPool2d(2),
        *_conv_relu(32, 64, 3, True), nn.MaxPool2d(2),
        nn.Flatten(),                                   # 64 x 7 x 7 = 3136
        nn.Linear(3136, 128), nn.ReLU(inplace=True),
        nn.Linear(128, 10))


def autoencoder():
    return nn.Sequential(
        nn.Linear(784, 256), nn.ReLU(inplace=True),
        nn.Linear(256, 64), nn.ReLU(inplace=True),
        nn.Linear(64, 256), nn.ReLU(inplace=True),
        nn.Linear(256, 784), nn.Sigmoid())


def catdog():
    # The final "Dense 1 sigmoid": the sigmoid lives in the loss (BCE with logits).
    return nn.Sequential(
        *_conv_relu(3, 32, 3, False), nn.MaxPool2d(2),  # 62 -> 31
        *_conv_relu(32, 32, 3, False), nn.MaxPool2d(2),  # 29 -> 14
        nn.Flatten(),                                    # 32 x 14 x 14 = 6272
        nn.Linear(6272, 128), nn.ReLU(inplace=True),
        nn.Linear(128, 1))


def catdog_wide():
    layers = []
    in_ch = 3
    for _ in range(4):                                   # 128 -> 63 -> 30 -> 14 -> 6
        layers += _conv_relu(in_ch, 64, 3, False) + [nn.MaxPool2d(2)]
        in_ch = 64
    return nn.Sequential(
        *layers,
        nn.Flatten(),                                    # 64 x 6 x 6 = 2304
        nn.Linear(2304, 128), nn.ReLU(inplace=True),
        nn.Dropout(0.5),
        nn.Linear(128, 1))


def deep_cnn():
    layers = []
    in_ch = 3
    for i in range(32):
        layers += _conv_relu(in_ch, 64, 3, True)
        in_ch = 64
        if (i + 1) % 8 == 0:                             # 64 -> 32 -> 16 -> 8 -> 4
            layers.append(nn.MaxPool2d(2))
    return nn.Sequential(
        *layers,
        nn.Flatten(),                                    # 64 x 4 x 4 = 1024
        nn.Linear(1024, 128), nn.ReLU(inplace=True),
        nn.Linear(128, 1))


def cifar10_keras():
    return nn.Sequential(
        *_conv_relu(3, 32, 3, True),
        *_conv_relu(32, 32, 3, False),                   # 32 -> 30
        nn.MaxPool2d(2), nn.Dropout(0.25),               # 15
        *_conv_relu(32, 64, 3, True),
        *_conv_relu(64, 64, 3, False),                   # 15 -> 13
        nn.MaxPool2d(2), nn.Dropout(0.25),               # 6
        nn.Flatten(),                                    # 64 x 6 x 6 = 2304
        nn.Linear(2304, 512), nn.ReLU(inplace=True),
        nn.Dropout(0.5),
        nn.Linear(512, 10))


def cifar10_tf():
    # LRN with TensorFlow's depth radius 4, bias 1, alpha 0.001/9, beta 0.75; PyTorch divides
    # alpha by size itself, so alpha=0.001 here.
    return nn.Sequential(
        *_conv_relu(3, 64, 5, True),
        TfSameMaxPool(3, 2),                             # 24 -> 12
        nn.LocalResponseNorm(9, alpha=0.001, beta=0.75, k=1.0),
        *_conv_relu(64, 64, 5, True),
        nn.LocalResponseNorm(9, alpha=0.001, beta=0.75, k=1.0),
        TfSameMaxPool(3, 2),                             # 12 -> 6
        nn.Flatten(),                                    # 64 x 6 x 6 = 2304
        nn.Linear(2304, 384), nn.ReLU(inplace=True),
        nn.Linear(384, 192), nn.ReLU(inplace=True),
        nn.Linear(192, 10))


# name -> (constructor, input shape per sample, loss kind)
#   "ce": softmax cross-entropy on logits, integer class labels (10 classes)
#   "bce": binary cross-entropy with logits on the pre-sigmoid output, float 0/1 labels
#   "mse": mean squared error of the sigmoid output against the input itself
def alexnet():
    import torchvision
    return torchvision.models.alexnet()


def alexnet_bn():
    """AlexNet with batch norm after every conv and hidden dense layer (convs without bias)."""
    def block(cin, cout, k, s, p):
        return [nn.Conv2d(cin, cout, k, s, p, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]
    return nn.Sequential(
        *block(3, 64, 11, 4, 2), nn.MaxPool2d(3, 2),
        *block(64, 192, 5, 1, 2), nn.MaxPool2d(3, 2),
        *block(192, 384, 3, 1, 1), *block(384, 256, 3, 1, 1), *block(256, 256, 3, 1, 1),
        nn.MaxPool2d(3, 2), nn.AdaptiveAvgPool2d(6), nn.Flatten(),
        nn.Dropout(0.5), nn.Linear(9216, 4096), nn.BatchNorm1d(4096), nn.ReLU(inplace=True),
        nn.Dropout(0.5), nn.Linear(4096, 4096), nn.BatchNorm1d(4096), nn.ReLU(inplace=True),
        nn.Linear(4096, 1000))


def resnet18():
    import torchvision
    return torchvision.models.resnet18()


def resnet50():
    import torchvision
    return torchvision.models.resnet50()


ZOO = {
    "fmnist-cnn": (fmnist_cnn, (1, 28, 28), "ce"),
    "autoencoder": (autoencoder, (784,), "mse"),
    "catdog": (catdog, (3, 64, 64), "bce"),
    "catdog-wide": (catdog_wide, (3, 128, 128), "bce"),
    "deep-cnn": (deep_cnn, (3, 64, 64), "bce"),
    "cifar10-keras": (cifar10_keras, (3, 32, 32), "ce"),
    "cifar10-tf": (cifar10_tf, (3, 24, 24), "ce"),
    "alexnet": (alexnet, (3, 224, 224), "ce"),
    "alexnet-bn": (alexnet_bn, (3, 224, 224), "ce"),
    "resnet18": (resnet18, (3, 224, 224), "ce"),
    "resnet50": (resnet50, (3, 224, 224), "ce"),
}

IMAGENET = {"alexnet", "alexnet-bn", "resnet18", "resnet50"}

NUM_CLASSES = 10


def build(name):
    """The model `name` of the zoo, with PyTorch's default initialization."""
    if name not in ZOO:
        raise ValueError("unknown model '%s' (known: %s)" % (name, ", ".join(ZOO)))
    return ZOO[name][0]()


def input_shape(name):
    return ZOO[name][1]


def loss_kind(name):
    return ZOO[name][2]


def loss_for(name):
    """loss(output, target) for model `name` (see ZOO for the kinds)."""
    kind = loss_kind(name)
    if kind == "ce":
        return nn.CrossEntropyLoss()
    if kind == "bce":
        bce = nn.BCEWithLogitsLoss()
        return lambda out, target: bce(out.view(-1), target)
    return nn.MSELoss()


def make_batch(name, batch_size, generator):
    """Synthetic (input, target) for one batch: inputs uniform in [0, 1); targets random
    classes, random 0/1 labels, or the input itself for the autoencoder."""
    x = torch.rand((batch_size,) + input_shape(name), generator=generator)
    kind = loss_kind(name)
    if kind == "ce":
        classes = 1000 if name in IMAGENET else NUM_CLASSES
        y = torch.randint(0, classes, (batch_size,), generator=generator)
    elif kind == "bce":
        y = torch.randint(0, 2, (batch_size,), generator=generator).float()
    else:
        y = x
    return x, y


def parameter_count(model):
    return sum(p.numel() for p in model.parameters())


def forward_flops(name):
    """Forward FLOPs per sample: 2 x multiply-adds of the conv and dense layers (pooling,
    activations, LRN and bias additions are not counted)."""
    model = build(name).eval()
    macs = [0]

    def conv_hook(mod, _inp, out):
        k = mod.in_channels // mod.groups * mod.kernel_size[0] * mod.kernel_size[1]
        macs[0] += out[0].numel() * k

    def linear_hook(mod, _inp, out):
        macs[0] += out[0].numel() * mod.in_features

    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            m.register_forward_hook(conv_hook)
        elif isinstance(m, nn.Linear):
            m.register_forward_hook(linear_hook)
    with torch.no_grad():
        model(torch.zeros((1,) + input_shape(name)))
    return 2 * macs[0]


def summary():
    print("%-14s %-12s %-5s %12s %16s" % ("model", "input", "loss", "parameters",
                                          "fwd FLOPs/sample"))
    for name in ZOO:
        shape = "x".join(str(d) for d in input_shape(name))
        print("%-14s %-12s %-5s %12d %16d" % (name, shape, loss_kind(name),
                                              parameter_count(build(name)),
                                              forward_flops(name)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--summary", action="store_true",
                        help="print parameter counts and forward FLOPs per sample")
    args = parser.parse_args()
    if args.summary:
        summary()
    else:
        parser.print_help()


if __name__ == "__main__":
    main()

"""Writes the PyTorch reference of epoch's ConvLstm2d (include/epoch/nn/recurrent.h) that
tests/nn/recurrent_test.cpp compares with: for each case, inputs and weights drawn here, the
cell unrolled over T steps with torch.nn.functional.conv2d in float64, and the outputs and
gradients of L = sum(h_1..T * r) + sum(c_T * rc) with respect to every input and weight. The
file is safetensors (f32), written without the safetensors package.

Usage: bench/reference/convlstm_reference.py OUT.safetensors   (needs torch: scripts/setup-reference.sh)"""

import json
import sys

import torch
import torch.nn.functional as F

from prednet import write_safetensors  # the same directory

# name, batch, steps, in channels, hidden, height, width, kernel, peepholes, gate activation
CASES = [
    ("peephole", 2, 4, 3, 4, 5, 6, 3, True, "sigmoid"),
    ("hard", 2, 3, 2, 3, 4, 4, 5, False, "hard_sigmoid"),
]


def gate(z, kind):
    if kind == "hard_sigmoid":
        return torch.clamp(0.2 * z + 0.5, 0.0, 1.0)
    return torch.sigmoid(z)


def unrolled(x, h, c, weight, bias, peep, kind, hidden):
    """The cell of recurrent.h over x's T steps: the hidden states (N, T, hidden, H, W), c_T."""
    pad = weight.shape[-1] // 2
    hs = []
    for t in range(x.shape[1]):
        z = F.conv2d(torch.cat([x[:, t], h], 1), weight, bias, padding=pad)
        zi, zf, zo, zg = torch.split(z, hidden, 1)
        if peep is not None:
            zi = zi + peep[0] * c
            zf = zf + peep[1] * c
        i, f, g = gate(zi, kind), gate(zf, kind), torch.tanh(zg)
        c = f * c + i * g
        if peep is not None:
            zo = zo + peep[2] * c
        h = gate(zo, kind) * torch.tanh(c)
        hs.append(h)
    return torch.stack(hs, 1), c


def case_tensors(name, n, steps, cin, hidden, height, width, k, peepholes, kind, seed):
    g = torch.Generator().manual_seed(seed)

    def draw(*shape, scale=1.0):
        return ((torch.rand(*shape, generator=g) * 2 - 1) * scale).float()

    fan = (cin + hidden) * k * k
    leaves = {
        "x": draw(n, steps, cin, height, width),
        "h0": draw(n, hidden, height, width, scale=0.5),
        "c0": draw(n, hidden, height, width, scale=0.5),
        "weight": draw(4 * hidden, cin + hidden, k, k, scale=(3.0 / fan) ** 0.5),
        "bias": draw(4 * hidden, scale=0.3),
    }
    if peepholes:
        for p in ("input_peephole", "forget_peephole", "output_peephole"):
            leaves[p] = draw(hidden, height, width, scale=0.5)
    r = draw(n, steps, hidden, height, width)
    rc = draw(n, hidden, height, width)

    wide = {key: v.double().requires_grad_(True) for key, v in leaves.items()}
    peep = None
    if peepholes:
        peep = [wide["input_peephole"], wide["forget_peephole"], wide["output_peephole"]]
    hs, c_last = unrolled(wide["x"], wide["h0"], wide["c0"], wide["weight"], wide["bias"], peep,
                          kind, hidden)
    loss = (hs * r.double()).sum() + (c_last * rc.double()).sum()
    loss.backward()

    out = {}
    for key, v in leaves.items():
        out[f"{name}.{key}"] = v
        out[f"{name}.grad.{key}"] = wide[key].grad.float()
    out[f"{name}.r"] = r
    out[f"{name}.rc"] = rc
    out[f"{name}.hidden"] = hs.detach().float()
    out[f"{name}.c_last"] = c_last.detach().float()
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    tensors, cases = {}, []
    for seed, case in enumerate(CASES):
        tensors.update(case_tensors(*case, seed=seed + 1))
        cases.append(case[0])
    meta = {"torch": torch.__version__, "cases": ",".join(cases),
            "config": json.dumps({c[0]: {"kernel": c[7], "peepholes": c[8], "gate": c[9]}
                                  for c in CASES})}
    write_safetensors(sys.argv[1], tensors, meta)
    print(f"wrote {len(tensors)} tensors of {len(cases)} cases to {sys.argv[1]} (torch "
          f"{torch.__version__})")


if __name__ == "__main__":
    main()

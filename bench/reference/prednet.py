"""PyTorch definitions of epoch's PredNet models (include/epoch/models/prednet.h, MODELS.md),
with parameters named as epoch names them, and the golden file tests/models/prednet_test.cpp
compares with.

  prednet.py --summary          parameter counts and convolution FLOPs per frame of the zoo's
                                prednet and prednet-study, counted on these modules
  prednet.py --bench MODEL      times training steps (Adam 1e-3) of the zoo's MODEL on random
                                clips in [0, 1], as `epoch bench --model MODEL`: one JSON line
                                with the median step and frames/s (--threads, --batch-size,
                                --steps, --warmup)
  prednet.py --golden OUT       small PredNets on drawn weights and sequences: each one's loss
                                terms, predicted frames, loss and every parameter's gradient
                                (float64 here), as safetensors (f32), with the summary's counts
                                in its metadata
"""

import argparse
import json
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

# The zoo's configurations (MODELS.md).
PREDNET = dict(stack=(3, 48, 96, 192), height=128, width=160, peepholes=False,
               gate="hard_sigmoid", loss="error_units", layer_weights=(1, 0, 0, 0))
PREDNET_STUDY = dict(stack=(3, 48, 96, 192), height=120, width=160, peepholes=True,
                     gate="hard_sigmoid", loss="next_frame_mse", layer_weights=(1, 0, 0, 0))


def gate_fn(kind):
    if kind == "hard_sigmoid":
        return lambda z: torch.clamp(0.2 * z + 0.5, 0.0, 1.0)
    return torch.sigmoid


class ConvLSTM(nn.Module):
    """epoch's nn::ConvLstm2d: gates input, forget, output, cell from one convolution over
    [x, h]; optional per-pixel peepholes."""

    def __init__(self, cin, hidden, k, peep_hw, gate):
        super().__init__()
        self.hidden = hidden
        self.conv = nn.Conv2d(cin + hidden, 4 * hidden, k, padding=k // 2)
        self.gate = gate_fn(gate)
        self.peep = peep_hw is not None
        if self.peep:
            for name in ("input_peephole", "forget_peephole", "output_peephole"):
                setattr(self, name, nn.Parameter(torch.zeros(hidden, *peep_hw)))

    def forward(self, x, h, c):
        zi, zf, zo, zg = torch.split(self.conv(torch.cat([x, h], 1)), self.hidden, 1)
        if self.peep:
            zi = zi + self.input_peephole * c
            zf = zf + self.forget_peephole * c
        c = self.gate(zf) * c + self.gate(zi) * torch.tanh(zg)
        if self.peep:
            zo = zo + self.output_peephole * c
        return self.gate(zo) * torch.tanh(c), c


class PredNet(nn.Module):
    def __init__(self, stack, height, width, peepholes, gate, loss, layer_weights, k=3):
        super().__init__()
        L = len(stack)
        self.stack, self.height, self.width, self.loss_kind = stack, height, width, loss
        self.layer_weights = layer_weights
        self.r = nn.ModuleList()
        for l in range(L):
            cin = 2 * stack[l] + (stack[l + 1] if l + 1 < L else 0)
            hw = (height >> l, width >> l) if peepholes else None
            self.r.append(ConvLSTM(cin, stack[l], k, hw, gate))
        self.ahat = nn.ModuleList(nn.Conv2d(stack[l], stack[l], k, padding=k // 2)
                                  for l in range(L))
        self.a = nn.ModuleList(nn.Conv2d(2 * stack[l], stack[l + 1], k, padding=k // 2)
                               for l in range(L - 1))

    def epoch_named_parameters(self):
        """(epoch's name, parameter): r0.weight, r0.input_peephole, ahat0.weight, a0.bias, ..."""
        for name, p in self.named_parameters():
            kind, index, rest = name.split(".", 2)
            rest = rest.replace("conv.", "")
            yield f"{kind}{index}.{rest}", p

    def forward(self, x):
        """x (N, T, C, H, W) in [0, 1] -> (loss terms (N, T, K), predictions (N, T, C, H, W))."""
        n, steps = x.shape[0], x.shape[1]
        L = len(self.stack)
        r = [torch.zeros(n, self.stack[l], self.height >> l, self.width >> l, dtype=x.dtype)
             for l in range(L)]
        c = [t.clone() for t in r]
        e = [torch.zeros(n, 2 * self.stack[l], self.height >> l, self.width >> l, dtype=x.dtype)
             for l in range(L)]
        terms, preds = [], []
        for t in range(steps):
            r_up = None
            for l in reversed(range(L)):
                inp = e[l] if l == L - 1 else torch.cat([e[l], r_up], 1)
                r[l], c[l] = self.r[l](inp, r[l], c[l])
                if l > 0:
                    r_up = F.interpolate(r[l], scale_factor=2, mode="nearest")
            a = x[:, t]
            step = []
            for l in range(L):
                ahat = self.ahat[l](r[l])
                ahat = torch.clamp(ahat, 0.0, 1.0) if l == 0 else F.relu(ahat)
                e[l] = torch.cat([F.relu(a - ahat), F.relu(ahat - a)], 1)
                if l == 0:
                    preds.append(ahat)
                    if self.loss_kind == "next_frame_mse":
                        step.append(((ahat - a) ** 2).flatten(1).mean(1))
                if self.loss_kind == "error_units":
                    step.append(e[l].flatten(1).mean(1))
                if l + 1 < L:
                    a = F.max_pool2d(F.relu(self.a[l](e[l])), 2)
            terms.append(torch.stack(step, 1))
        return torch.stack(terms, 1), torch.stack(preds, 1)

    def loss(self, terms):
        """Time weights 0 at t = 0 and 1/(T-1) after; layer weights (error units) or 1."""
        steps, k = terms.shape[1], terms.shape[2]
        tw = torch.full((steps,), 1.0 / (steps - 1), dtype=terms.dtype)
        tw[0] = 0
        lw = (torch.tensor(self.layer_weights, dtype=terms.dtype)
              if self.loss_kind == "error_units" else torch.ones(1, dtype=terms.dtype))
        return (terms * tw[None, :, None] * lw[None, None, :k]).sum() / terms.shape[0]


def conv_flops_per_frame(model):
    """Multiply-adds x 2 of every convolution for one frame of one sample, counted by hooks."""
    total = [0]

    def hook(module, inputs, output):
        total[0] += 2 * output[0].numel() * module.in_channels * module.kernel_size[0] * \
            module.kernel_size[1]

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, nn.Conv2d)]
    with torch.no_grad():
        model(torch.zeros(1, 1, model.stack[0], model.height, model.width))
    for h in handles:
        h.remove()
    return total[0]


def summary():
    out = {}
    for name, cfg in (("prednet", PREDNET), ("prednet-study", PREDNET_STUDY)):
        m = PredNet(**cfg)
        out[name] = {"parameters": sum(p.numel() for p in m.parameters()),
                     "flops_per_frame": conv_flops_per_frame(m)}
    return out


# name, batch, steps, stack, height, width, peepholes, gate, loss, layer weights
GOLDEN = [
    ("errors", 2, 4, (3, 4, 6), 8, 12, False, "hard_sigmoid", "error_units", (1.0, 0.1, 0.1)),
    ("study", 1, 3, (3, 4, 6), 8, 8, True, "sigmoid", "next_frame_mse", (1.0, 0.0, 0.0)),
]


def golden_case(name, n, steps, stack, height, width, peepholes, gate, loss, lw, seed):
    torch.manual_seed(seed)
    model = PredNet(stack, height, width, peepholes, gate, loss, lw)
    with torch.no_grad():
        for pname, p in model.epoch_named_parameters():
            if pname.endswith("_peephole"):
                p.uniform_(-0.3, 0.3)  # zero at initialization; drawn here to test them
            elif pname.endswith("bias"):
                p.uniform_(-0.1, 0.1)
    x = torch.rand(n, steps, stack[0], height, width)
    out = {f"{name}.x": x}
    for pname, p in model.epoch_named_parameters():
        out[f"{name}.{pname}"] = p.detach().clone()
    model = model.double()
    terms, preds = model(x.double())
    total = model.loss(terms)
    total.backward()
    out[f"{name}.terms"] = terms.detach().float()
    out[f"{name}.predictions"] = preds.detach().float()
    out[f"{name}.loss"] = total.detach().float().reshape(1)
    for pname, p in model.epoch_named_parameters():
        out[f"{name}.grad.{pname}"] = p.grad.float()
    config = {"stack": list(stack), "height": height, "width": width, "peepholes": peepholes,
              "gate": gate, "loss": loss, "layer_weights": list(lw)}
    return out, config


def bench(name, threads, batch, steps, warmup):
    import statistics
    import time
    torch.set_num_threads(threads)
    cfg = {"prednet": PREDNET, "prednet-study": PREDNET_STUDY}[name]
    frames = 10 if name == "prednet" else 20
    model = PredNet(**cfg)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.rand(batch, frames, cfg["stack"][0], cfg["height"], cfg["width"])
    times = []
    for i in range(warmup + steps):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        terms, _ = model(x)
        loss = model.loss(terms)
        loss.backward()
        opt.step()
        loss.item()
        if i >= warmup:
            times.append(time.perf_counter() - start)
    step = statistics.median(times)
    return {"framework": "pytorch", "torch": torch.__version__, "model": name, "threads": threads,
            "batch_size": batch, "frames_per_sample": frames, "steps": steps,
            "train_step_ms_median": step * 1e3, "train_frames_per_s": batch * frames / step}


def write_safetensors(path, tensors, metadata):
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for key, t in tensors.items():
        data = t.contiguous().numpy().astype("<f4").tobytes()
        header[key] = {"dtype": "F32", "shape": list(t.shape),
                       "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--summary", action="store_true")
    p.add_argument("--golden", metavar="OUT")
    p.add_argument("--bench", metavar="MODEL", choices=["prednet", "prednet-study"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch-size", type=int)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    args = p.parse_args()
    if args.bench:
        batch = args.batch_size or (4 if args.bench == "prednet" else 1)
        print(json.dumps(bench(args.bench, args.threads, batch, args.steps, args.warmup)))
    if args.summary:
        print(json.dumps(summary(), indent=1))
    if args.golden:
        tensors, configs = {}, {}
        for seed, case in enumerate(GOLDEN):
            t, cfg = golden_case(*case, seed=seed + 1)
            tensors.update(t)
            configs[case[0]] = cfg
        meta = {"torch": torch.__version__, "configs": json.dumps(configs),
                "summary": json.dumps(summary())}
        write_safetensors(args.golden, tensors, meta)
        print(f"wrote {len(tensors)} tensors to {args.golden}")
    if not (args.summary or args.golden or args.bench):
        p.error("give --summary, --bench MODEL or --golden OUT")


if __name__ == "__main__":
    main()

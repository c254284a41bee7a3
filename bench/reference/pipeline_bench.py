"""PyTorch/PIL side of the input-pipeline comparison: decode + augment JPEGs to 64x64 as the
catdog recipe does (Keras ImageDataGenerator(shear_range=0.2, zoom_range=0.2,
horizontal_flip=True) after a 64x64 load), with PIL + torchvision, timed in one process
(images/s on one core; also decoding alone, and resize + augment alone on decoded images) and
optionally through a DataLoader with worker processes.
Example: run_torch.sh pypi bench/reference/pipeline_bench.py DIR --make 200 --workers 2

Per image: Image.open; img.draft("RGB", (64, 64)) (libjpeg's DCT-domain downscale: a 500x375
JPEG decodes at 1/4, 125x94); convert("RGB"); resize to 64x64 (bilinear); RandomAffine(
degrees=0, shear=11.46 degrees (0.2 rad), scale=(0.8, 1.2), bilinear); RandomHorizontalFlip;
ToImage + ToDtype(float32, scale=True). Differences from Keras/epoch (the work per image is
the same): torchvision's scale is one isotropic factor (Keras and epoch draw x and y zoom
independently); its shear moves x in proportion to y by tan(angle) (Keras's, in (row, col),
moves rows in proportion to columns by sin(angle) and scales columns by cos(angle)); it fills
outside points with 0 (Keras and epoch default to the nearest edge pixel)."""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch
import torchvision
from PIL import Image
from torchvision.transforms import v2

SIZE = 64
SHEAR_DEG = 11.46  # 0.2 rad: Keras 1's shear_range=0.2 is in radians


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", help="folder of JPEGs (searched recursively)")
    p.add_argument("--make", type=int, default=0, metavar="N",
                   help="first write N synthetic 500x375 JPEGs into FOLDER when it holds none")
    p.add_argument("--images", type=int, default=0,
                   help="images per timed pass (cycling through the folder); 0: each file once")
    p.add_argument("--passes", type=int, default=3, help="timed passes; the median is reported")
    p.add_argument("--workers", type=int, default=0,
                   help="also time a DataLoader with this many worker processes (0: skip)")
    p.add_argument("--batch-size", type=int, default=32, help="DataLoader batch size")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    if args.make < 0 or args.images < 0 or args.passes < 1 or args.workers < 0 \
            or args.batch_size < 1:
        p.error("--make, --images and --workers must be >= 0; --passes, --batch-size >= 1")
    return args


def make_images(folder, n, seed):
    """n smooth, noisy 500x375 RGB JPEGs (quality 90), a pure function of the seed."""
    folder.mkdir(parents=True, exist_ok=True)
    gen = torch.Generator().manual_seed(seed)
    ys = torch.linspace(0, 1, 375).view(375, 1, 1)
    xs = torch.linspace(0, 1, 500).view(1, 500, 1)
    for i in range(n):
        a = torch.rand(3, generator=gen) * 255
        b = torch.rand(3, generator=gen) * 255
        f = torch.rand(2, generator=gen) * 20 + 2
        img = a * xs + b * ys + 40 * torch.sin(f[0] * xs * 6.28) * torch.cos(f[1] * ys * 6.28)
        img = img + torch.randn(375, 500, 3, generator=gen) * 6
        pixels = img.clamp(0, 255).to(torch.uint8).numpy()
        Image.fromarray(pixels, "RGB").save(folder / f"synthetic_{i:05d}.jpg", quality=90)


def list_jpegs(folder):
    return sorted(p for p in folder.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg"))


def decode(path):
    """The decoded, DCT-downscaled RGB image (pixels loaded)."""
    with Image.open(path) as img:
        img.draft("RGB", (SIZE, SIZE))
        rgb = img.convert("RGB")
    rgb.load()
    return rgb


def make_augment():
    return v2.Compose([
        v2.RandomAffine(degrees=0, shear=SHEAR_DEG, scale=(0.8, 1.2),
                        interpolation=v2.InterpolationMode.BILINEAR),
        v2.RandomHorizontalFlip(),
        v2.ToImage(),
        v2.ToDtype(torch.float32, scale=True),
    ])


class JpegDataset(torch.utils.data.Dataset):
    def __init__(self, paths, count):
        self.paths = paths
        self.count = count
        self.augment = make_augment()

    def __len__(self):
        return self.count

    def __getitem__(self, i):
        img = decode(self.paths[i % len(self.paths)]).resize((SIZE, SIZE), Image.BILINEAR)
        return self.augment(img)


def timed_passes(run, passes):
    """Runs run() once untimed (warm caches), then `passes` times; median seconds."""
    run()
    times = []
    for _ in range(passes):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    args = parse_args()
    folder = Path(args.folder)
    if args.make and not list_jpegs(folder):
        make_images(folder, args.make, args.seed)
    paths = list_jpegs(folder)
    if not paths:
        sys.exit(f"pipeline_bench: no JPEG files in {folder}")
    count = args.images or len(paths)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)

    def decode_only():
        for i in range(count):
            decode(paths[i % len(paths)])

    dataset = JpegDataset(paths, count)

    def single_process():
        for i in range(count):
            dataset[i]

    decoded = [decode(paths[i]) for i in range(min(count, len(paths)))]
    augment = make_augment()

    def augment_only():
        for i in range(count):
            augment(decoded[i % len(decoded)].resize((SIZE, SIZE), Image.BILINEAR))

    sample = dataset[0]
    assert sample.shape == (3, SIZE, SIZE) and sample.dtype == torch.float32
    decode_s = timed_passes(decode_only, args.passes)
    augment_s = timed_passes(augment_only, args.passes)
    full_s = timed_passes(single_process, args.passes)
    first = decode(paths[0])
    result = {
        "images_per_s": count / full_s,
        "per_core": count / full_s,
        "decode_only_per_s": count / decode_s,
        "augment_only_per_s": count / augment_s,
        "images": count,
        "files": len(paths),
        "decoded_size": list(first.size),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "pillow": Image.__version__,
        "cpus": os.cpu_count(),
    }
    if args.workers:
        loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size,
                                             num_workers=args.workers, shuffle=False,
                                             persistent_workers=True)

        def through_loader():
            for batch in loader:
                assert batch.shape[1:] == (3, SIZE, SIZE)

        loader_s = timed_passes(through_loader, args.passes)
        result["loader_workers"] = args.workers
        result["loader_images_per_s"] = count / loader_s
        result["loader_per_core"] = count / loader_s / args.workers
    print(json.dumps(result))


if __name__ == "__main__":
    main()

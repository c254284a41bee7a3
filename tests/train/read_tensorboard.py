"""Prints every scalar of a TensorBoard log folder, read by TensorBoard's own reader, as
`tag step value` lines, tags sorted: the check that TensorBoard reads epoch's event files
(tests/train/scalar_events_test.cpp).

usage: python3 read_tensorboard.py DIR
"""
import sys

from tensorboard.backend.event_processing.event_accumulator import SCALARS, EventAccumulator


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    accumulator = EventAccumulator(sys.argv[1], size_guidance={SCALARS: 0})  # 0: keep all
    accumulator.Reload()
    for tag in sorted(accumulator.Tags()[SCALARS]):
        for event in accumulator.Scalars(tag):
            print(tag, event.step, repr(event.value))
    return 0


if __name__ == "__main__":
    sys.exit(main())

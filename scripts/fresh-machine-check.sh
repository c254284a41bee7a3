#!/usr/bin/env bash
# The fresh-machine check: builds a minimal Debian 12 root with debootstrap, copies in a `git
# archive` of HEAD (uncommitted files cannot help), and runs the README's commands inside it
# with chroot, as a newcomer would: `apt-get install make`, `make train`, `make test`. Then it
# removes three packages and checks that CMake names them in one line. Prints one line per
# step with its time and stops non-zero at the first failure, showing the end of its log.
#
# Usage (as root): scripts/fresh-machine-check.sh [--out DIR] [--suite bookworm]
#   [--mirror URL] [--train-args ARGS] [--ctest-args ARGS] [--keep]
#   --out         where the root, the package caches and the logs go (build/fresh-machine)
#   --train-args  added to `epoch train` (default "--epochs 1": one short epoch)
#   --ctest-args  added to ctest (default none: the whole suite)
#   --keep        keep the root after a successful check (a failed one is always kept)
# Downloaded .deb files are cached in DIR/cache between runs; nothing installed is.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$repo/build/fresh-machine
suite=bookworm
mirror=http://deb.debian.org/debian
train_args="--epochs 1"
ctest_args=""
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --suite) suite=$2; shift 2 ;;
    --mirror) mirror=$2; shift 2 ;;
    --train-args) train_args=$2; shift 2 ;;
    --ctest-args) ctest_args=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "fresh-machine-check: unknown argument $1 (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
done

if [ "$(id -u)" -ne 0 ]; then
  echo "fresh-machine-check: needs root (debootstrap, mount, chroot); run it with sudo" >&2
  exit 2
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$out/root
log=$out/log.txt
: > "$log"

# Pseudo-filesystems mounted inside the root: fresh instances, never binds of the host's /dev,
# so removing the root cannot reach the host's devices.
unmount_root() {
  local m
  for m in var/cache/apt/archives dev/shm dev/pts sys proc; do
    if mountpoint -q "$root/$m" 2> /dev/null; then umount -l "$root/$m"; fi
  done
}
remove_root() {
  unmount_root
  if findmnt -rn -o TARGET | grep -q "^$root/"; then
    echo "fresh-machine-check: something is still mounted under $root; not removing it" >&2
    exit 1
  fi
  rm -rf --one-file-system "$root"
}
trap unmount_root EXIT

step_start=0
step() {  # step NAME: starts a timed step
  step_name=$1
  step_start=$(date +%s)
  echo "== $step_name" >> "$log"
}
step_done() {  # step_done [DETAIL]
  printf '%-28s %5d s  %s\n' "$step_name" $(( $(date +%s) - step_start )) "${1:-}"
}
fail() {
  printf '%-28s FAILED after %d s: %s (log: %s)\n' "$step_name" $(( $(date +%s) - step_start )) "$1" "$log"
  tail -n 40 "$log" | sed 's/^/    /'
  exit 1
}
in_root() {  # in_root COMMAND: runs a shell command inside the root, as its root user
  chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin bash -c "$1"
}

commit=$(git -C "$repo" rev-parse --short HEAD)
started=$(date +%s)
echo "fresh-machine check of $commit ($(git -C "$repo" log -1 --format=%cs)) in $root"

step "host tools"
for tool in debootstrap git; do
  if ! command -v $tool > /dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $tool >> "$log" 2>&1 ||
      fail "cannot install $tool on this machine"
  fi
done
step_done "debootstrap $(debootstrap --version | awk '{print $2}')"

step "debootstrap $suite"
if [ -e "$root" ]; then remove_root; fi
mkdir -p "$out/cache/debootstrap" "$out/cache/apt"
debootstrap --variant=minbase --cache-dir="$out/cache/debootstrap" "$suite" "$root" "$mirror" >> "$log" 2>&1 ||
  fail "debootstrap failed"
cat > "$root/etc/apt/sources.list" << EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb ${mirror%/debian}/debian-security $suite-security main
EOF
cp /etc/resolv.conf "$root/etc/resolv.conf"
root_size=$(du -sh --one-file-system "$root" | cut -f1)
mount -t proc proc "$root/proc"
mount -t sysfs -o ro sysfs "$root/sys"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts"
mount -t tmpfs tmpfs "$root/dev/shm"
mount --bind "$out/cache/apt" "$root/var/cache/apt/archives"
step_done "$root_size minbase root"

step "copy HEAD (git archive)"
mkdir -p "$root/root/epoch"
git -C "$repo" archive --format=tar HEAD | tar -x -C "$root/root/epoch" || fail "git archive failed"
step_done "$(git -C "$repo" ls-files | wc -l) files"

step "apt-get install make"
in_root "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends make" >> "$log" 2>&1 ||
  fail "the README's prerequisite did not install"
step_done "(the README's one prerequisite)"

step "make train"
in_root "cd /root/epoch && make train TRAIN_ARGS='$train_args'" >> "$log" 2>&1 || fail "make train failed"
accuracy=$(grep -E '^(test|validation) accuracy:' "$log" | tail -n 1 | awk '{print $3}')
[ -n "$accuracy" ] || fail "make train printed no accuracy"
train_wall=$(grep -o -E 'wall time [0-9.]+ s' "$log" | tail -n 1 | awk '{print $3}')
step_done "accuracy $accuracy, training ${train_wall} s of it (TRAIN_ARGS='$train_args')"

step "make test"
in_root "cd /root/epoch && make test CTEST_ARGS='$ctest_args'" >> "$log" 2>&1 || fail "make test failed"
summary=$(grep -E 'tests passed' "$log" | tail -n 1)
step_done "$summary${ctest_args:+ (CTEST_ARGS='$ctest_args')}"

step "missing-package message"
removed="ocl-icd-opencl-dev libdnnl-dev libgtest-dev"
in_root "DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq $removed" >> "$log" 2>&1 ||
  fail "could not remove $removed"
if in_root "cd /root/epoch && cmake -S . -B /tmp/configure-missing -G Ninja" > "$out/missing.txt" 2>&1; then
  fail "CMake configured without $removed"
fi
cat "$out/missing.txt" >> "$log"
line=$(grep -E '^ *epoch: missing Debian packages:' "$out/missing.txt" || true)
[ -n "$line" ] || fail "CMake's error does not name the missing packages"
for p in $removed; do
  grep -q -w -- "$p" <<< "$line" || fail "CMake's error does not name $p"
done
if grep -q -E 'FindPackageHandleStandardArgs|dnnl-config.cmake' "$out/missing.txt"; then
  fail "CMake's error still comes from inside a package's config"
fi
step_done "$(sed 's/^ *//' <<< "$line" | cut -c1-80)"

unmount_root
if [ $keep -eq 0 ]; then remove_root; fi
total=$(( $(date +%s) - started ))
result="$(date +%F) commit $commit: passed in $total s (make train: accuracy $accuracy; make test: $summary)"
echo "$result" | tee "$out/result.txt"

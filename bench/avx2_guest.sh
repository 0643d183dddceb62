#!/usr/bin/env bash
# Run a command on an AVX2-only CPU: a KVM guest whose CPU model has AVX2 and no AVX-512.
#
#   bench/avx2_guest.sh [--cpu MODEL] [--accel kvm|tcg] [--mem SIZE] [--smp N] [--out DIR] -- CMD [ARG...]
#   bench/avx2_guest.sh -- grep -c avx512 /proc/cpuinfo        # prints 0
#   bench/avx2_guest.sh --out /tmp/avx2 -- reference_service/.venv/bin/python \
#       bench/bench_ocr.py --json /tmp/avx2/ocr.json --cpu-note "KVM guest ..."
#
# Why (issue 34): the OCR service's precision is chosen from the CPU's ISA (bf16 with AVX-512
# BF16, else int8 or f32), and its Done-when asks for the numbers on an AVX2-only CPU. A CPU
# with AVX-512 can only force the precision; OpenVINO still runs its AVX-512 (VNNI) kernels.
# Inside a guest with `-cpu EPYC-Rome` (QEMU's Zen 2 model: AVX2, FMA, no AVX-512) CPUID offers
# no AVX-512, so OpenVINO/oneDNN and the service see what an AVX2-only CPU offers. It is a
# guest CPU model on whatever host runs it, not a Zen 2 part: the cores' speed is the host's.
#
# The guest boots Debian's stock kernel (package linux-image-<version>-amd64, unpacked, never
# installed) with a busybox initramfs; it sees the host's / read-only over virtio-9p with a
# tmpfs overlay on top (writes vanish at power-off), so the same venvs, models and Tesseract
# run with no network (loopback only). DIR (--out, default a temporary folder) is shared
# read-write at the same path: write results there. The command runs in the current folder
# with this shell's PATH, HOME, PYTHONPATH and OCR_*/ARCHKIT_* variables; the script exits
# with its status. The guest's /proc/cpuinfo flags are kept in DIR/guest-cpuinfo.txt.
#
# Needs: /dev/kvm, apt packages qemu-system-x86 and busybox-static. The kernel and initramfs
# are cached in $AVX2_GUEST_CACHE (default ~/.cache/archkit/avx2-guest), outside the clone.
set -euo pipefail

cpu=EPYC-Rome
accel=kvm
mem=6G
smp=2
out=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --cpu) cpu=$2; shift 2 ;;
        --accel) accel=$2; shift 2 ;;
        --mem) mem=$2; shift 2 ;;
        --smp) smp=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --) shift; break ;;
        *) echo "avx2_guest.sh: unknown option $1 (usage: $0 [--cpu M] [--mem S] [--smp N] [--out DIR] -- CMD...)" >&2; exit 2 ;;
    esac
done
[[ $# -gt 0 ]] || { echo "avx2_guest.sh: no command after --" >&2; exit 2; }

for tool in qemu-system-x86_64 busybox; do
    command -v "$tool" >/dev/null || { echo "avx2_guest.sh: $tool missing: apt-get install -y qemu-system-x86 busybox-static" >&2; exit 2; }
done
[[ $accel != kvm || -w /dev/kvm ]] || { echo "avx2_guest.sh: /dev/kvm is missing or not writable: a guest at native speed needs KVM" >&2; exit 2; }

if [[ $accel == kvm ]]; then
    # QEMU silently drops what KVM cannot give a guest, so ask KVM first (KVM_GET_SUPPORTED_CPUID,
    # leaf 1 ECX bit 28 = AVX, leaf 7 EBX bit 5 = AVX2). A nested
    # hypervisor may offer none of them: this session's machine runs kvm_pvm (PVM), whose
    # supported CPUID has no XSAVE, AVX, FMA or AVX2, and which boots only PVM guest kernels.
    python3 - <<'EOF' || exit 5
import fcntl, os, struct, sys
fd = os.open("/dev/kvm", os.O_RDWR)
n = 256
buf = bytearray(struct.pack("II", n, 0) + bytes(40 * n))
fcntl.ioctl(fd, 0xC008AE05, buf, True)  # KVM_GET_SUPPORTED_CPUID (linux/kvm.h)
leaves = {}
for i in range(struct.unpack_from("I", buf)[0]):
    f, idx, _fl, a, b, c, d = struct.unpack_from("7I", buf, 8 + 40 * i)
    leaves[(f, idx)] = (a, b, c, d)
avx = bool(leaves.get((1, 0), (0, 0, 0, 0))[2] >> 28 & 1)
avx2 = bool(leaves.get((7, 0), (0, 0, 0, 0))[1] >> 5 & 1)
if not (avx and avx2):
    mods = sorted(m for m in os.listdir("/sys/module") if m.startswith("kvm"))
    sys.exit(f"avx2_guest.sh: this KVM ({', '.join(mods)}) offers guests no AVX/AVX2 (KVM_GET_SUPPORTED_CPUID: "
             f"avx={avx}, avx2={avx2}), so no KVM guest here is an AVX2 CPU; --accel tcg emulates one (for correctness, not speed)")
EOF
fi

cache=${AVX2_GUEST_CACHE:-$HOME/.cache/archkit/avx2-guest}
mkdir -p "$cache"
# The stock Debian kernel: it has 9p, virtio and overlayfs as modules (the cloud kernel has no 9p).
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
[[ -n "$kpkg" ]] || { echo "avx2_guest.sh: apt-cache knows no linux-image-amd64 (run apt-get update)" >&2; exit 2; }
# keyed by this script too: the startup image embeds its init below
kdir=$cache/$kpkg-$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)
if [[ ! -f $kdir/initrd.img ]]; then
    rm -rf "$kdir.tmp" && mkdir -p "$kdir.tmp/deb" "$kdir.tmp/initramfs"
    (cd "$kdir.tmp/deb" && apt-get download "$kpkg" >/dev/null 2>&1 && dpkg-deb -x ./*.deb x)
    kver=${kpkg#linux-image-}
    mods=$kdir.tmp/deb/x/lib/modules/$kver/kernel
    cp "$kdir.tmp/deb/x/boot/vmlinuz-$kver" "$kdir.tmp/vmlinuz"
    ir=$kdir.tmp/initramfs
    mkdir -p "$ir"/{bin,dev,proc,sys,lib/modules,lower,upper,newroot}
    cp "$(command -v busybox)" "$ir/bin/busybox"
    for m in drivers/virtio/virtio_ring drivers/virtio/virtio drivers/virtio/virtio_pci_legacy_dev \
        drivers/virtio/virtio_pci_modern_dev drivers/virtio/virtio_pci fs/netfs/netfs fs/fscache/fscache \
        net/9p/9pnet net/9p/9pnet_virtio fs/9p/9p fs/overlayfs/overlay; do
        cp "$mods/$m.ko" "$ir/lib/modules/"
    done
    cat > "$ir/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc && mount -t sysfs sys /sys && mount -t devtmpfs dev /dev
# Dependency order (each module's modinfo "depends=").
for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci netfs fscache 9pnet 9pnet_virtio 9p overlay; do
    insmod /lib/modules/$m.ko || { echo "guest: insmod $m failed"; poweroff -f; }
done
opts=trans=virtio,version=9p2000.L,msize=524288
mount -t 9p -o $opts,ro,cache=loose hostroot /lower
mount -t tmpfs -o size=2g tmpfs /upper && mkdir -p /upper/u /upper/w
mount -t overlay -o lowerdir=/lower,upperdir=/upper/u,workdir=/upper/w overlay /newroot
out=$(sed -n 's/.*avx2out=\([^ ]*\).*/\1/p' /proc/cmdline)
# No tmpfs of its own on /tmp: the overlay already makes it writable, and a fresh tmpfs would hide
# a checkout or an out folder that lies under the host's /tmp (a clean clone from mktemp -d, pytest's
# tmp_path).
mkdir -p /newroot$out && mount -t 9p -o $opts out /newroot$out
mount -t proc proc /newroot/proc && mount -t sysfs sys /newroot/sys && mount -t devtmpfs dev /newroot/dev
mkdir -p /newroot/dev/shm /newroot/dev/pts && mount -t tmpfs -o size=2g shm /newroot/dev/shm
mount -t devpts devpts /newroot/dev/pts
ip link set lo up
cp /proc/cpuinfo /newroot$out/guest-cpuinfo.txt
chroot /newroot /bin/sh $out/guest-cmd.sh
echo $? > /newroot$out/guest-rc
sync
poweroff -f
EOF
    chmod +x "$ir/init"
    (cd "$ir" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1 > "$kdir.tmp/initrd.img")
    rm -rf "$kdir.tmp/deb" "$ir"
    rm -rf "$kdir" && mv "$kdir.tmp" "$kdir"
fi

if [[ -z "$out" ]]; then out=$(mktemp -d /tmp/avx2-guest.XXXXXX); fi
mkdir -p "$out" && out=$(cd "$out" && pwd)
[[ "$out" != *" "* ]] || { echo "avx2_guest.sh: --out must not contain spaces" >&2; exit 2; }
rm -f "$out/guest-rc" "$out/guest-cpuinfo.txt"
{
    echo "cd $(printf %q "$PWD") || exit 97"
    for v in PATH HOME PYTHONPATH $(compgen -e | grep -E '^(OCR_|ARCHKIT_)' || true); do
        [[ -n "${!v+x}" ]] && echo "export $v=$(printf %q "${!v}")"
    done
    printf '%q ' "$@"
    echo
} > "$out/guest-cmd.sh"

qemu-system-x86_64 -accel "$accel" -machine pc -cpu "$cpu" -smp "$smp" -m "$mem" \
    -nodefaults -no-user-config -display none -serial stdio -no-reboot \
    -kernel "$kdir/vmlinuz" -initrd "$kdir/initrd.img" \
    -append "console=ttyS0 quiet panic=-1 avx2out=$out" \
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
    -virtfs "local,path=$out,mount_tag=out,security_model=none"

[[ -f "$out/guest-rc" ]] || { echo "avx2_guest.sh: the guest ended without running the command (see its console above)" >&2; exit 3; }
if grep -q -m1 avx512 "$out/guest-cpuinfo.txt"; then
    echo "avx2_guest.sh: the guest CPU ($cpu) offers AVX-512: not an AVX2-only CPU" >&2
    exit 4
fi
exit "$(cat "$out/guest-rc")"

#!/usr/bin/env bash
# Installs what `schedlab vm` (and its test) needs from Debian's packages:
# QEMU for x86-64 and binutils' strip (for a small initramfs). The guest
# kernel itself is not installed: `schedlab vm` downloads Debian's newest
# linux-image-6.12.*-amd64-unsigned with `apt-get download` on first use and
# unpacks it into ~/.cache/schedlab (SCHEDLAB_CACHE_DIR to move it).
# Idempotent; scripts/install-deps.sh calls it.
set -euo pipefail

need=()
command -v qemu-system-x86_64 >/dev/null 2>&1 || need+=(qemu-system-x86)
command -v strip >/dev/null 2>&1 || need+=(binutils)

# With no kernel cached yet, `schedlab vm` will ask apt for the newest 6.12:
# package lists older than the security mirror's newest kernel name a .deb
# that is gone, so refresh them first (the same rule as schedlab's cache_dir()).
if [ -n "${SCHEDLAB_CACHE_DIR:-}" ]; then
    kernels="$SCHEDLAB_CACHE_DIR/kernels"
elif [ -n "${XDG_CACHE_HOME:-}" ]; then
    kernels="$XDG_CACHE_HOME/schedlab/kernels"
else
    kernels="${HOME:-/root}/.cache/schedlab/kernels"
fi
refresh_lists=0
compgen -G "$kernels/6.12.*/vmlinuz" >/dev/null || refresh_lists=1

if ((${#need[@]})) || ((refresh_lists)); then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq || echo "install-vm-deps: apt-get update failed; the kernel download may fail too" >&2
    fi
fi
if ((${#need[@]})); then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        # From the machine's own suites only (bookworm: QEMU 7.2): never add
        # trixie, whose pin would upgrade the host's libraries.
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    else
        echo "install-vm-deps: missing ${need[*]}; run this script as root on Debian, or install them" >&2
        echo "install-vm-deps: (schedlab vm and its tests are skipped without QEMU)" >&2
        exit 0
    fi
fi
qemu-system-x86_64 --version | head -1

#!/usr/bin/env bash
# Fetches Debian's rt-app. Its example JSON files, unpacked into
# target/rt-app by `apt-get download` + `dpkg -x` (no root needed, and
# untouched by images that strip /usr/share/doc), are the rt-app front end's
# test corpus; as root, `apt-get install rt-app` puts the binary on PATH for
# the tests that run it beside the model. Idempotent; scripts/install-deps.sh
# calls it. Without apt it says so, and those tests skip with a message.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/target/rt-app"
if [ ! -d "$dest/usr/share/doc/rt-app/examples" ]; then
    if command -v apt-get >/dev/null 2>&1; then
        tmp=$(mktemp -d)
        trap 'rm -rf "$tmp"' EXIT
        # apt's sandbox user must be able to write the download directory.
        chmod 777 "$tmp"
        if ! (cd "$tmp" && apt-get download -qq rt-app >/dev/null 2>&1); then
            [ "$(id -u)" = 0 ] && apt-get update -qq || true
            (cd "$tmp" && apt-get download -qq rt-app >/dev/null 2>&1) || true
        fi
        deb=$(ls "$tmp"/rt-app_*.deb 2>/dev/null | head -n1 || true)
        if [ -n "$deb" ]; then
            mkdir -p "$dest"
            dpkg -x "$deb" "$dest"
        else
            echo "install-rtapp-deps: could not download Debian's rt-app; the example-corpus tests skip" >&2
        fi
    else
        echo "install-rtapp-deps: no apt-get; the rt-app example-corpus tests skip" >&2
    fi
fi
need=()
command -v rt-app >/dev/null 2>&1 || need+=(rt-app)
"$(dirname "$0")/apt-install.sh" "install-rtapp-deps (the tests that run rt-app beside the model need it)" ${need[@]+"${need[@]}"}

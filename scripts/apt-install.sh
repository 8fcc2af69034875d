#!/usr/bin/env bash
# apt-install.sh WHO PACKAGE...: install Debian packages as the install-*-deps
# scripts do: quietly, without recommends, refreshing the package lists once
# if the first try fails; without root or apt, say what is missing (WHO names
# the caller and what then skips) and succeed, so install-deps.sh goes on.
set -euo pipefail
who=$1
shift
((${#@})) || exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null; then
        apt-get update -qq || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null ||
            echo "$who: could not install $*" >&2
    fi
else
    echo "$who: missing $*; run as root on Debian to install them" >&2
fi

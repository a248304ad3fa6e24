#!/bin/sh
# Make sure the real programs the tests start are present, as Debian packages: by default the
# Prometheus and node-exporter binaries the metrics integration tests start; or the
# `package:command` pairs given (scripts/ensure-browser.sh asks for Chromium and ChromeDriver).
# As root, install the missing packages with apt-get; otherwise say exactly what to install and
# fail, so `make test` never skips the real-parts tests silently.
set -eu

name="${ENSURE_NAME:-ensure-debs}"
[ "$#" -gt 0 ] || set -- prometheus:prometheus prometheus-node-exporter:prometheus-node-exporter

missing=""
for wanted in "$@"; do
    package="${wanted%%:*}"
    program="${wanted#*:}"
    command -v "$program" >/dev/null 2>&1 || [ -x "/usr/bin/$program" ] \
        || missing="$missing $package"
done

[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "$name: missing:$missing" >&2
    echo "$name: install them first, e.g. 'sudo apt-get install$missing'" >&2
    exit 1
fi

echo "$name: installing$missing with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
# The packages' maintainer scripts would start system services; we run our own processes.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod +x "$policy"
    created_policy=1
fi
status=0
apt-get update -q >/dev/null
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing >/dev/null || status=$?
[ "$created_policy" = 1 ] && rm -f "$policy"
exit "$status"

#!/bin/sh
# Make sure the real Prometheus and node-exporter binaries the metrics integration tests start
# are present. As root, install the missing ones with apt-get (Debian packages); otherwise say
# exactly what to install and fail, so `make test` never skips the real-parts tests silently.
set -eu

missing=""
command -v prometheus >/dev/null 2>&1 || [ -x /usr/bin/prometheus ] || missing="$missing prometheus"
command -v prometheus-node-exporter >/dev/null 2>&1 || [ -x /usr/bin/prometheus-node-exporter ] \
    || missing="$missing prometheus-node-exporter"

[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure-debs: missing:$missing" >&2
    echo "ensure-debs: install them first, e.g. 'sudo apt-get install$missing'" >&2
    exit 1
fi

echo "ensure-debs: installing$missing with apt-get" >&2
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

#!/bin/sh
# Make sure the real headless Chromium and its ChromeDriver that the dashboard's browser test
# drives are present (Debian's `chromium` and `chromium-driver`). As root, install the missing
# ones with apt-get; otherwise say exactly what to install and fail, so `make test` never skips
# the browser test silently.
set -eu

missing=""
[ -x /usr/bin/chromium ] || command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
[ -x /usr/bin/chromedriver ] || command -v chromedriver >/dev/null 2>&1 \
    || missing="$missing chromium-driver"

[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure-browser: missing:$missing" >&2
    echo "ensure-browser: install them first, e.g. 'sudo apt-get install$missing'" >&2
    exit 1
fi

echo "ensure-browser: installing$missing with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing >/dev/null

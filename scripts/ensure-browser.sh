#!/bin/sh
# Make sure the real headless Chromium and its ChromeDriver that the dashboard's browser test
# drives are present (Debian's `chromium` and `chromium-driver`), the way scripts/ensure-debs.sh
# makes sure of Prometheus: installed as root, else named and failed, never skipped silently.
set -eu
ENSURE_NAME=ensure-browser exec sh "$(dirname "$0")/ensure-debs.sh" \
    chromium:chromium chromium-driver:chromedriver

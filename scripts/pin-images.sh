#!/bin/sh
# Resolve the digest each Dockerfile base image's tag points at now, to move the pins on purpose.
#
#   scripts/pin-images.sh [--write] [DOCKERFILE]
#
# For every `FROM NAME:TAG[@sha256:...]` line it asks the registry (docker buildx imagetools
# inspect: the multi-platform index digest, the one `docker pull` resolves a tag to) and prints
#   NAME:TAG  pinned sha256:...  now sha256:...
# With --write it rewrites those FROM lines to NAME:TAG@<now>; review and commit the change
# with the date. Exits 1 when a pin differs (without --write), so CI can tell a stale pin.
set -eu

write=0
if [ "${1:-}" = "--write" ]; then
    write=1
    shift
fi
dockerfile=${1:-$(dirname "$0")/../Dockerfile}
[ -f "$dockerfile" ] || { echo "pin-images: no such file: $dockerfile" >&2; exit 2; }
command -v docker >/dev/null 2>&1 || { echo "pin-images: needs docker with buildx" >&2; exit 2; }

stale=0
# The base images: FROM's first word, without a stage name (`AS x`) or a stage reference.
images=$(awk 'toupper($1) == "FROM" { print $2 }' "$dockerfile" | grep ':' | sort -u)
for image in $images; do
    tag=${image%@*}
    pinned=""
    case "$image" in *@sha256:*) pinned=${image#*@} ;; esac
    now=$(docker buildx imagetools inspect --format '{{json .Manifest}}' "$tag" |
        sed -n 's/.*"digest"[[:space:]]*:[[:space:]]*"\(sha256:[0-9a-f]\{64\}\)".*/\1/p')
    [ -n "$now" ] || { echo "pin-images: no digest for $tag" >&2; exit 1; }
    echo "$tag  pinned ${pinned:-none}  now $now"
    if [ "$pinned" != "$now" ]; then
        stale=1
        if [ "$write" = 1 ]; then
            # Every FROM line of this tag, pinned or not, gets the new digest.
            escaped=$(printf '%s' "$tag" | sed 's/[.[\*^$/]/\\&/g')
            sed -i "s/^\(FROM[[:space:]]\{1,\}\)$escaped\(@sha256:[0-9a-f]*\)\{0,1\}\([[:space:]]\|\$\)/\1$tag@$now\3/" \
                "$dockerfile"
        fi
    fi
done
[ "$write" = 1 ] || [ "$stale" = 0 ]

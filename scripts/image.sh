#!/usr/bin/env bash
# Build the image of the three components and make it pullable by your cluster, in one command:
#   scripts/image.sh --kind CLUSTER         build, and load it into a kind cluster's nodes
#   scripts/image.sh --push REGISTRY/NAME   build for linux/amd64 and linux/arm64, and push
#
# The tag is the version deploy/cluster/kustomization.yaml names (`images`: newTag). With
# --kind the image is built under exactly the name that file gives (newName:newTag), so
# `kubectl apply -k deploy/cluster` finds it in the nodes without any edit. With --push it
# goes to REGISTRY/NAME:TAG, and the script prints the one line to change in that file.
# Until one of them has run (or a release was pushed), no node can pull the image.
#
# Usage: scripts/image.sh (--kind CLUSTER | --push REGISTRY/NAME)
set -euo pipefail

kind_cluster=
push_to=

prog=image
usage_lines=12

take_option() {
    taken=2
    case "$1" in
    --kind) kind_cluster=${2-} ;;
    --push) push_to=${2-} ;;
    *) return 1 ;;
    esac
}

# shellcheck source=scripts/lib/options.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib/options.sh"

parse_options "$@"
[ "${#operands[@]}" -eq 0 ] || usage
[ -n "$kind_cluster$push_to" ] && { [ -z "$kind_cluster" ] || [ -z "$push_to" ]; } ||
    fail "give exactly one of --kind CLUSTER and --push REGISTRY/NAME"

root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
kustomization="$root/deploy/cluster/kustomization.yaml"
name=$(sed -n 's/^ *newName: *//p' "$kustomization")
tag=$(sed -n 's/^ *newTag: *//p' "$kustomization")
[[ $tag =~ ^[A-Za-z0-9_][A-Za-z0-9._-]*$ ]] || fail "no single newTag in $kustomization: $tag"

command -v docker >/dev/null 2>&1 || fail "docker is required"
if [ -n "$kind_cluster" ]; then
    command -v kind >/dev/null 2>&1 || fail "kind is required for --kind"
    image="$name:$tag"
    docker build -t "$image" "$root"
    kind load docker-image "$image" --name "$kind_cluster"
    printf 'image: %s built and loaded into kind cluster %s\n' "$image" "$kind_cluster" >&2
else
    # A registry may have a port (localhost:5000/tas); the name after the last / has no tag.
    [[ $push_to =~ ^[a-z0-9][a-z0-9._/:-]*[a-z0-9]$ && ${push_to##*/} != *:* ]] ||
        fail "--push takes REGISTRY/NAME without a tag, got: $push_to"
    image="$push_to:$tag"
    docker buildx build --platform linux/amd64,linux/arm64 -t "$image" --push "$root"
    printf 'image: %s pushed; in %s set\n  newName: %s\n' "$image" "$kustomization" "$push_to" >&2
fi

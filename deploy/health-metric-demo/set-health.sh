#!/usr/bin/env bash
# Set a node's `health_metric` for the health-metric demo.
#
#   set-health.sh [--ssh-user USER] [--dir DIR] NODE VALUE
#       over ssh: writes DIR/text.prom (default /tmp/node-metrics) on NODE, for that node's
#       node-exporter textfile collector: `node_health_metric VALUE`
#   set-health.sh --docker [--dir DIR] NODE VALUE
#       the same through `docker exec`, for kind, whose nodes are containers named as the nodes
#   set-health.sh --local DIR NODE VALUE
#       here: writes DIR/NODE.prom with `node_health_metric{node="NODE"} VALUE`, for
#       docker-compose (deploy/compose/metrics) and the textfile metric source
#
# NODE is a Kubernetes node name, VALUE a number (0 healthy, 1 do not schedule, 2 deschedule).
# Nothing typed on the command line ever becomes shell code: every argument is checked against
# a strict pattern first, and what runs on the node is a fixed script given quoted arguments.
set -euo pipefail

# Single-quote for a POSIX shell: the remote side runs the command through the user's shell.
quote() {
    local escaped=${1//\'/\'\\\'\'}
    printf "'%s'" "$escaped"
}

ssh_user=""
remote_dir=/tmp/node-metrics
local_dir=""
via=ssh

prog=set-health
usage_lines=15

take_option() {
    taken=2
    case "$1" in
    --ssh-user) ssh_user=${2-} ;;
    --dir) remote_dir=${2-} ;;
    --local) local_dir=${2-} ;;
    --docker)
        via=docker
        taken=1
        ;;
    *) return 1 ;;
    esac
}

# shellcheck source=scripts/lib/options.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../../scripts/lib/options.sh"

parse_options "$@"
set -- "${operands[@]}"
[ "$#" -eq 2 ] || usage
node=$1
value=$2

# A DNS-1123 subdomain (what Kubernetes allows for node names); bash's =~ anchors the whole
# string, so an embedded newline cannot slip past.
[[ $node =~ ^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$ ]] || fail "not a node name: $node"
[[ $value =~ ^-?[0-9]{1,15}(\.[0-9]{1,15})?$ ]] || fail "not a number: $value"

if [ -n "$local_dir" ]; then
    [ -d "$local_dir" ] || fail "no such directory: $local_dir"
    # Write then rename, so node-exporter never reads half a file.
    tmp=$(mktemp "$local_dir/.set-health.XXXXXX")
    printf 'node_health_metric{node="%s"} %s\n' "$node" "$value" >"$tmp"
    chmod 0644 "$tmp"
    mv -f -- "$tmp" "$local_dir/$node.prom"
    printf 'set-health: %s health_metric=%s (%s)\n' "$node" "$value" "$local_dir/$node.prom" >&2
    exit 0
fi

[[ $remote_dir =~ ^/[A-Za-z0-9._/-]{0,255}$ && $remote_dir != *..* ]] ||
    fail "--dir must be an absolute path of [A-Za-z0-9._/-] without '..', got: $remote_dir"
if [ -n "$ssh_user" ]; then
    [[ $ssh_user =~ ^[a-z_][a-z0-9_-]{0,31}$ ]] || fail "not a user name: $ssh_user"
fi

# Fixed remote scripts: `writer` writes the file, the directory and the value arriving as $1 and
# $2; `script` runs it as root, through `sudo -n` for another user (the directory is root's),
# the writer arriving as $3.
# shellcheck disable=SC2016
writer='set -eu; umask 022; mkdir -p "$1"; tmp="$1/.text.prom.$$"; printf "node_health_metric %s\n" "$2" >"$tmp"; mv -f "$tmp" "$1/text.prom"'
# shellcheck disable=SC2016
script='set -eu; if [ "$(id -u)" = 0 ]; then exec sh -c "$3" set-health "$1" "$2"; fi; exec sudo -n sh -c "$3" set-health "$1" "$2"'

if [ "$via" = docker ]; then
    [ -z "$ssh_user" ] || fail "--ssh-user does not apply to --docker"
    # docker exec hands each argument over as it is: no shell on this side, nothing to quote.
    docker exec "$node" sh -c "$script" set-health "$remote_dir" "$value" "$writer"
    printf 'set-health: %s health_metric=%s (%s/text.prom, docker exec)\n' \
        "$node" "$value" "$remote_dir" >&2
    exit 0
fi

remote="sh -c $(quote "$script") set-health $(quote "$remote_dir") $(quote "$value") $(quote "$writer")"

ssh_args=(-o BatchMode=yes -o ConnectTimeout=10)
[ -z "$ssh_user" ] || ssh_args+=(-l "$ssh_user")
ssh "${ssh_args[@]}" -- "$node" "$remote"
printf 'set-health: %s health_metric=%s (%s/text.prom)\n' "$node" "$value" "$remote_dir" >&2

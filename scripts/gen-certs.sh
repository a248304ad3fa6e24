#!/usr/bin/env bash
# Make the certificates for the extender's mTLS with openssl:
#   ca.crt, ca.key          a private CA (keep ca.key offline once you are done)
#   extender.crt/.key       the extender's server certificate, for the Service's DNS names
#                           (and localhost, for the pod's own health probe)
#   client.crt/.key         kube-scheduler's client certificate
#   scraper.crt/.key        Prometheus's client certificate, to scrape the extender's /metrics
#                           (which sits behind the same mTLS port)
#   adapter.crt/.key        deploy/metrics-pipeline's prometheus-adapter's serving certificate
#                           (tas-prometheus-adapter in --adapter-namespace), so that its
#                           APIService trusts it through caBundle (ca.crt), not blindly
#
# Usage: scripts/gen-certs.sh [--namespace NS] [--service NAME] [--adapter-namespace NS]
#                             [--days N] [--ca-days N] OUT_DIR
#
# The three leaf certificates last --days (365); the CA lasts --ca-days (3650), which must be
# longer, so that new leaves can be signed while the old ones still work and the CA never
# expires with them. Every certificate's expiry is alerted on (deploy/monitoring).
#
# OUT_DIR is created if missing; keep it outside any git work tree (ca.key signs anything the
# extender accepts). The script refuses to run when OUT_DIR already holds a CA, so that a second
# run never silently replaces the CA that clusters trust.
set -euo pipefail

namespace=telemetry-aware-scheduling
service=tas-extender
days=365
ca_days=3650
adapter_namespace=monitoring

prog=gen-certs
usage_lines=23

take_option() {
    taken=2
    case "$1" in
    --namespace) namespace=${2-} ;;
    --service) service=${2-} ;;
    --days) days=${2-} ;;
    --ca-days) ca_days=${2-} ;;
    --adapter-namespace) adapter_namespace=${2-} ;;
    *) return 1 ;;
    esac
}

# shellcheck source=scripts/lib/options.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib/options.sh"

# A DNS-1123 label: what Kubernetes allows for namespace and Service names.
dns_label='^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$'

parse_options "$@"
set -- "${operands[@]}"
[ "$#" -eq 1 ] || usage
out=$1

[[ $namespace =~ $dns_label ]] || fail "namespace must be a DNS label, got: $namespace"
[[ $service =~ $dns_label ]] || fail "service must be a DNS label, got: $service"
[[ $adapter_namespace =~ $dns_label ]] ||
    fail "adapter-namespace must be a DNS label, got: $adapter_namespace"
[[ $days =~ ^[1-9][0-9]{0,4}$ ]] || fail "days must be a whole number from 1 to 99999, got: $days"
[[ $ca_days =~ ^[1-9][0-9]{0,4}$ ]] ||
    fail "ca-days must be a whole number from 1 to 99999, got: $ca_days"
[ "$ca_days" -gt "$days" ] ||
    fail "ca-days ($ca_days) must be more than days ($days): the CA must outlive what it signs"
command -v openssl >/dev/null 2>&1 || fail "openssl is required"

mkdir -p -- "$out"
[ ! -e "$out/ca.key" ] || fail "$out/ca.key exists: refusing to replace a CA; use a new directory"

umask 077
work=$(mktemp -d)
trap 'rm -rf -- "$work"' EXIT

new_key() {
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null
}

# --- CA ----------------------------------------------------------------------------------------
new_key "$out/ca.key"
openssl req -x509 -new -sha256 -days "$ca_days" -key "$out/ca.key" -out "$out/ca.crt" \
    -subj "/CN=telemetry-aware-scheduling-ca" \
    -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -addext "subjectKeyIdentifier=hash"

# Sign "$work/$1.csr" with the CA, with the extensions in "$work/$1.ext".
sign() {
    openssl x509 -req -sha256 -days "$days" -in "$work/$1.csr" \
        -CA "$out/ca.crt" -CAkey "$out/ca.key" -CAcreateserial -CAserial "$work/ca.srl" \
        -extfile "$work/$1.ext" -out "$out/$1.crt" 2>/dev/null
}

# --- extender (server; clientAuth too, so its health probe can present it) ----------------------
fqdn="$service.$namespace.svc"
new_key "$out/extender.key"
openssl req -new -sha256 -key "$out/extender.key" -out "$work/extender.csr" -subj "/CN=$fqdn"
{
    printf 'basicConstraints=critical,CA:FALSE\n'
    printf 'keyUsage=critical,digitalSignature,keyEncipherment\n'
    printf 'extendedKeyUsage=serverAuth,clientAuth\n'
    printf 'subjectAltName=DNS:%s,DNS:%s,DNS:%s,DNS:%s,DNS:localhost,IP:127.0.0.1\n' \
        "$service" "$service.$namespace" "$fqdn" "$fqdn.cluster.local"
} >"$work/extender.ext"
sign extender

# --- kube-scheduler (client) ---------------------------------------------------------------------
new_key "$out/client.key"
openssl req -new -sha256 -key "$out/client.key" -out "$work/client.csr" \
    -subj "/CN=tas-kube-scheduler"
{
    printf 'basicConstraints=critical,CA:FALSE\n'
    printf 'keyUsage=critical,digitalSignature,keyEncipherment\n'
    printf 'extendedKeyUsage=clientAuth\n'
} >"$work/client.ext"
sign client

# --- Prometheus (client, for the extender's /metrics) ----------------------------------------------
new_key "$out/scraper.key"
openssl req -new -sha256 -key "$out/scraper.key" -out "$work/scraper.csr" \
    -subj "/CN=tas-metrics-scraper"
cp "$work/client.ext" "$work/scraper.ext"
sign scraper

# --- prometheus-adapter (server, for the API server's aggregation layer) ----------------------------
adapter="tas-prometheus-adapter.$adapter_namespace.svc"
new_key "$out/adapter.key"
openssl req -new -sha256 -key "$out/adapter.key" -out "$work/adapter.csr" -subj "/CN=$adapter"
{
    printf 'basicConstraints=critical,CA:FALSE\n'
    printf 'keyUsage=critical,digitalSignature,keyEncipherment\n'
    printf 'extendedKeyUsage=serverAuth\n'
    printf 'subjectAltName=DNS:%s,DNS:%s\n' "$adapter" "$adapter.cluster.local"
} >"$work/adapter.ext"
sign adapter

chmod 0644 "$out/ca.crt" "$out/extender.crt" "$out/client.crt" "$out/scraper.crt" "$out/adapter.crt"
printf 'gen-certs: wrote ca, extender (%s), client, scraper and adapter (%s) certificates to %s\n' \
    "$fqdn" "$adapter" "$out" >&2

#!/usr/bin/env bash
# The kind walkthrough of docs/deploy.md, run end to end (`make e2e-kind`, opt-in):
#   1. certificates (scripts/gen-certs.sh) and a kind cluster whose kube-scheduler calls the
#      extender (Way 1: deploy/kind/cluster.yaml + deploy/scheduler/kubeadm-patches);
#   2. the image, built under the name deploy/cluster/kustomization.yaml gives it (`images`) and
#      loaded into the nodes (`kind load docker-image`), so the Deployments find it there;
#   3. the CRD (crds/, on its own), then the standalone profile's steps of docs/deploy.md: its
#      namespaces, the Secrets in them, then deploy/profiles/standalone (the components,
#      node-exporter and Prometheus in tas-monitoring);
#   4. the health-metric demo: health set on the nodes with `docker exec` (kind nodes are
#      containers; no ssh), the demo pod's node labelled violating, the pod evicted (the
#      descheduler switched to Automatic) and placed elsewhere, the label gone after healing;
#   5. Prometheus scraping every component, the extender over mTLS.
#
# Usage: scripts/e2e-kind.sh
# Environment: TAS_KIND_CLUSTER (default tas-e2e), KIND_NODE_IMAGE (a kindest/node image; default
# kind's own), TAS_KIND_KEEP=1 to keep the cluster and the work directory afterwards,
# TAS_KIND_TIMEOUT (seconds each wait may take; default 240).
# Needs docker (running), kind and kubectl, and network access for the images; without them it
# prints why and exits 0 (skipped), so `make e2e-kind` is safe anywhere.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cluster=${TAS_KIND_CLUSTER:-tas-e2e}
namespace=telemetry-aware-scheduling
demo=health-metric-demo
timeout=${TAS_KIND_TIMEOUT:-240}

skip() {
    printf 'e2e-kind: SKIPPED: %s\n' "$1" >&2
    exit 0
}

fail() {
    printf 'e2e-kind: FAILED: %s\n' "$1" >&2
    exit 1
}

step() {
    printf '\n== e2e-kind: %s\n' "$1" >&2
}

# Run "$@" until it succeeds or $timeout seconds pass.
eventually() {
    local what=$1
    shift
    local deadline=$((SECONDS + timeout))
    until "$@" >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$deadline" ] || fail "$what (not within ${timeout}s)"
        sleep 3
    done
}

for tool in docker kind kubectl; do
    command -v "$tool" >/dev/null 2>&1 ||
        skip "$tool is not installed (this walkthrough needs docker, kind and kubectl)"
done
docker info >/dev/null 2>&1 || skip "the docker daemon is not reachable (docker info failed)"
[[ $cluster =~ ^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$ ]] || fail "bad TAS_KIND_CLUSTER: $cluster"
[[ $timeout =~ ^[1-9][0-9]{0,4}$ ]] || fail "bad TAS_KIND_TIMEOUT: $timeout"
if kind get clusters 2>/dev/null | grep -qx -- "$cluster"; then
    fail "a kind cluster named $cluster exists: delete it or set TAS_KIND_CLUSTER"
fi

work=$(mktemp -d)
created=0
cleanup() {
    local status=$?
    if [ "${TAS_KIND_KEEP:-0}" = 1 ]; then
        printf 'e2e-kind: kept cluster %s and %s (KUBECONFIG=%s)\n' \
            "$cluster" "$work" "$work/kubeconfig" >&2
    else
        [ "$created" = 0 ] || kind delete cluster --name "$cluster" >/dev/null 2>&1 || true
        rm -rf -- "$work"
    fi
    exit "$status"
}
trap cleanup EXIT
export KUBECONFIG="$work/kubeconfig"
cd "$root"
# The image the Deployments name once rendered: `images` of deploy/cluster/kustomization.yaml.
image=$(sed -n 's/^ *newName: *//p' deploy/cluster/kustomization.yaml):$(
    sed -n 's/^ *newTag: *//p' deploy/cluster/kustomization.yaml)
[[ $image =~ ^[a-z0-9][a-z0-9._/-]*:[A-Za-z0-9_][A-Za-z0-9._-]*$ ]] ||
    fail "no single image name and tag in deploy/cluster/kustomization.yaml: $image"

step "certificates and the kube-scheduler files (staged in $work)"
scripts/gen-certs.sh "$work/certs"
mkdir -p "$work/scheduler" "$work/kubeadm-patches"
cp deploy/scheduler/kube-scheduler-config.yaml "$work/scheduler/scheduler-config.yaml"
cp "$work/certs/client.crt" "$work/certs/client.key" "$work/certs/ca.crt" "$work/scheduler/"
cp deploy/scheduler/kubeadm-patches/*.yaml "$work/kubeadm-patches/"
sed "s#/tmp/tas-kind#$work#g" deploy/kind/cluster.yaml >"$work/cluster.yaml"

step "kind cluster $cluster"
created=1
kind create cluster --name "$cluster" --config "$work/cluster.yaml" --kubeconfig "$KUBECONFIG" \
    --wait 180s ${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"}
scheduler_args=$(kubectl -n kube-system get pods -l component=kube-scheduler \
    -o jsonpath='{.items[0].spec.containers[0].args} {.items[0].spec.dnsPolicy}')
case "$scheduler_args" in
*--config=/etc/kubernetes/tas/scheduler-config.yaml*ClusterFirstWithHostNet*) ;;
*) fail "kube-scheduler was not patched: $scheduler_args" ;;
esac

step "image $image, built and loaded into the nodes"
docker build -t "$image" .
kind load docker-image "$image" --name "$cluster"

step "the CRD (crds), then the standalone profile (deploy/profiles/standalone)"
kubectl apply -k crds
kubectl wait --for=condition=Established crd/taspolicies.telemetry.intel.com --timeout=60s
kubectl apply -f deploy/cluster/namespace.yaml -f deploy/metrics-pipeline/node-exporter/namespace.yaml
kubectl -n "$namespace" create secret generic tas-extender-tls \
    --from-file=tls.crt="$work/certs/extender.crt" --from-file=tls.key="$work/certs/extender.key" \
    --from-file=ca.crt="$work/certs/ca.crt"
kubectl -n tas-monitoring create secret generic tas-extender-scrape-tls \
    --from-file=tls.crt="$work/certs/scraper.crt" --from-file=tls.key="$work/certs/scraper.key" \
    --from-file=ca.crt="$work/certs/ca.crt"
kubectl apply -k deploy/profiles/standalone
kubectl -n tas-monitoring rollout status daemonset/tas-node-exporter --timeout="${timeout}s"
kubectl -n tas-monitoring rollout status deployment/tas-prometheus --timeout="${timeout}s"
for deployment in tas-extender tas-policy-controller tas-descheduler; do
    kubectl -n "$namespace" rollout status "deployment/$deployment" --timeout="${timeout}s"
done

step "health-metric demo: every node healthy, the demo app scheduled through the extender"
mapfile -t nodes < <(kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
for node in "${nodes[@]}"; do
    deploy/health-metric-demo/set-health.sh --docker "$node" 0
done
kubectl apply -f deploy/health-metric-demo/namespace.yaml
kubectl apply -f deploy/health-metric-demo/health-policy.yaml \
    -f deploy/health-metric-demo/demo-app.yaml
kubectl -n "$demo" rollout status deployment/demo-app --timeout="${timeout}s"
# Only a filter request writes these lines (the extender's `_log_decision`): the policy applied
# ("Filtered nodes available for demo-policy: ..."), or the pod let through because its metric
# has not reached Prometheus yet ("filter health-metric-demo/demo-app-...: every node passes").
# The policy store's "Policy health-metric-demo/demo-policy added" is no call from kube-scheduler.
extender_called() {
    kubectl -n "$namespace" logs -l app.kubernetes.io/name=tas-extender --tail=-1 |
        grep -qE "Filtered nodes available for demo-policy: |: filter $demo/demo-app-"
}
eventually "kube-scheduler calls the extender for the demo pod" extender_called
first=$(kubectl -n "$demo" get pods -l app=demo -o jsonpath='{.items[0].spec.nodeName}')
[ -n "$first" ] || fail "the demo pod has no node"

step "health 2 on $first: labelled violating, the pod evicted and placed elsewhere"
# Automatic mode for the walkthrough (the shipped default is Predictive, a dry run).
# The test ops refuse to patch if the arguments ever move.
args=/spec/template/spec/containers/0/args
kubectl -n "$namespace" patch deployment tas-descheduler --type json -p "[
    {\"op\": \"test\", \"path\": \"$args/5\", \"value\": \"--mode\"},
    {\"op\": \"replace\", \"path\": \"$args/6\", \"value\": \"Automatic\"},
    {\"op\": \"test\", \"path\": \"$args/7\", \"value\": \"--descheduling-interval\"},
    {\"op\": \"replace\", \"path\": \"$args/8\", \"value\": \"10s\"}]"
kubectl -n "$namespace" rollout status deployment/tas-descheduler --timeout="${timeout}s"
deploy/health-metric-demo/set-health.sh --docker "$first" 2
labelled() {
    [ "$(kubectl get node "$first" -o jsonpath='{.metadata.labels.demo-policy}')" = violating ]
}
eventually "node $first labelled demo-policy=violating" labelled
moved() {
    local now
    now=$(kubectl -n "$demo" get pods -l app=demo \
        --field-selector=status.phase=Running -o jsonpath='{.items[*].spec.nodeName}')
    [ -n "$now" ] && [[ " $now " != *" $first "* ]]
}
eventually "the demo pod moved off $first" moved

step "health 0 on $first: the label goes"
deploy/health-metric-demo/set-health.sh --docker "$first" 0
healed() {
    [ -z "$(kubectl get node "$first" -o jsonpath='{.metadata.labels.demo-policy}')" ]
}
eventually "node $first no longer labelled" healed

step "Prometheus scrapes node-exporter (instance = node name) and all three components"
query() {
    kubectl -n tas-monitoring exec deploy/tas-prometheus -- \
        wget -qO- "http://127.0.0.1:9090/api/v1/query?query=$1"
}
scraped() {
    local job
    for job in node-exporter tas-extender tas-policy-controller tas-descheduler; do
        query "up%7Bjob%3D%22$job%22%7D%3D%3D1" | grep -q '"value"' || return 1
    done
    query "node_health_metric%7Binstance%3D%22$first%22%7D" | grep -q '"value"'
}
eventually "every job up in Prometheus" scraped

printf '\ne2e-kind: PASSED (cluster %s)\n' "$cluster" >&2

"""The in-memory world: a cluster, a scheduler and a demo that need no Kubernetes and no
Prometheus (what `make run` runs on).

`make run` and the simulator run the real extender, policy controller and descheduler against
this package; the components cannot tell it from a real cluster. It sits beside the shared
library (`tas`), not in it: the components never import it, and it imports none of them but in
`loop`, which steps them, and `compose`, which builds the loop.

- `cluster`: the in-memory `Cluster` (store, watch-like notifications, the Eviction call);
- `disruption`: the PodDisruptionBudget verdict of the Eviction API (shared with the API
  emulator of the tests);
- `owners`: what a ReplicaSet, StatefulSet or DaemonSet does when its pod is evicted;
- `scheduler`: the kube-scheduler model (filters, scores, the extender protocol);
- `extender_client`: that protocol over HTTP, with kube-scheduler's exact wire format;
- `loop`: the closed loop that runs the components over a world, one step at a time (`tas run`,
  `tas run --scenario`, `tas simulate`);
- `compose`: the loop's composition root, the one place the loop, the reconciler and the
  scheduler model it steps are built and the view told what to fetch;
- `demo`: the TAS health-metric demo's nodes, pods and metrics, and its state as printed;
- `apply`: `kubectl apply` of TASPolicy files to the in-memory cluster.
"""

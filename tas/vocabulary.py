"""The names this project writes into and reads from Kubernetes objects, in one place.

They are the contract with the cluster and with Intel TAS users (same CRD, labels, annotations),
so they are defined once and imported everywhere else; changing one is a compatibility change.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# ---------------------------------------------------------------- the TASPolicy resource
GROUP = "telemetry.intel.com"
VERSION = "v1alpha1"
KIND = "TASPolicy"
PLURAL = "taspolicies"

# ---------------------------------------------------------------- labels
#: Pods opt into a policy with this label; the policy is looked up in the pod's namespace.
POLICY_LABEL = "telemetry-policy"
#: The value of the node label a violating node carries under the bare policy name.
VIOLATING = "violating"
#: Pods linking a policy and running on a node that violates it carry `violate=<policy>`.
POD_VIOLATION_LABEL = "violate"
#: Node labels of the labeling strategy live under this prefix plus the policy name.
LABELING_PREFIX = "telemetry.aware.scheduling."

# ---------------------------------------------------------------- annotations
#: Node annotation listing the bare label keys (`<policy>=violating`) the controller placed.
OWNED_ANNOTATION = "telemetry.aware.scheduling/owned-labels"
#: Upstream descheduler's per-pod override: evict even what the DefaultEvictor would protect.
EVICT_ANNOTATION = "descheduler.alpha.kubernetes.io/evict"
#: Static and mirror pods (the kubelet's own), which are never evicted.
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
CONFIG_SOURCE_ANNOTATION = "kubernetes.io/config.source"
#: Upstream descheduler's hint: evict this pod only when nothing else will do.
PREFER_NO_EVICTION_ANNOTATION = "descheduler.alpha.kubernetes.io/prefer-no-eviction"
#: The pod annotations any component reads. The Kubernetes adapter keeps only these: the rest
#: (last-applied configurations, sidecar injectors' notes) can be kilobytes a pod.
POD_ANNOTATIONS_READ = frozenset(
    {
        EVICT_ANNOTATION,
        MIRROR_ANNOTATION,
        CONFIG_SOURCE_ANNOTATION,
        PREFER_NO_EVICTION_ANNOTATION,
    }
)
#: The node annotations any component reads (the controller's note of the labels it owns).
NODE_ANNOTATIONS_READ = frozenset({OWNED_ANNOTATION})

# ---------------------------------------------------------------- taints and resources
#: The soft tainter's taint is `<prefix>/overutilized=true:PreferNoSchedule`.
DEFAULT_TAINT_PREFIX = "telemetry.aware.scheduling"
#: The NoSchedule taint the descheduler keeps on a node it clears for a pending pod over more
#: than one cycle (MakeRoomForPending), valued with the pod's uid.
RESERVED_TAINT_KEY = f"{DEFAULT_TAINT_PREFIX}/reserved"
#: The extended resource TAS-managed pods request; kube-scheduler ignores it for fit.
TELEMETRY_RESOURCE = "telemetry/scheduling"

# ---------------------------------------------------------------- KubeVirt
#: The label KubeVirt puts on every VM's launcher pod (virt-launcher).
VIRT_LAUNCHER: Mapping[str, str] = MappingProxyType({"kubevirt.io": "virt-launcher"})

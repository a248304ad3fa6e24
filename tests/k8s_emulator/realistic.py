"""Objects shaped and sized as a real API server serves them, for tests and the scale benchmark.

A pod of a Deployment on a current cluster is about 4 KB of JSON: besides what this project
reads it carries `managedFields` (one entry per writer: the ReplicaSet controller, the
kubelet), a projected service-account token volume, probes, a security context, the default
not-ready/unreachable tolerations and a status with five conditions and a container status. A
node is larger still: conditions with heartbeats, addresses, `nodeInfo` and the images it has
pulled (the kubelet reports up to 50). Both shapes here follow `kubectl get -o json` of a kind
cluster at 1.31, with names and numbers varied so that no two objects are equal.

Builders return fresh dicts a test may change. For bulk loading, the parts every pod of a
workload has in common (its managedFields, its container spec) are shared between the pods a
builder makes, which is safe in the emulator's store: it never changes a stored object in place.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

Object = dict[str, Any]

#: The time every generated object pretends to have been created; the kubelet's start times
#: and heartbeats are offsets from it.
BASE_TIME = "2026-11-01T08:00:00Z"


def _time(seconds: int) -> str:
    hours, rest = divmod(8 * 3600 + seconds, 3600)
    days, hours = divmod(hours, 24)
    minutes, secs = divmod(rest, 60)
    return f"2026-11-{1 + days % 28:02d}T{hours:02d}:{minutes:02d}:{secs:02d}Z"


def _hex(text: str, length: int) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()[:length]


def _uid(text: str) -> str:
    h = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _suffix(text: str) -> str:
    """Five characters of the alphabet the API server's generateName draws from."""
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return "".join(alphabet[b % len(alphabet)] for b in digest[:5])


@lru_cache(maxsize=4096)
def _workload_parts(app: str, image: str, cpu: str, memory: str) -> tuple[Object, ...]:
    """The parts all pods of one workload share: managed fields, container, tolerations."""
    controller_fields = {
        "manager": "kube-controller-manager",
        "operation": "Update",
        "apiVersion": "v1",
        "time": BASE_TIME,
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {
                "f:generateName": {},
                "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}},
                "f:ownerReferences": {".": {}, f'k:{{"uid":"{_uid(app)}"}}': {}},
            },
            "f:spec": {
                "f:containers": {
                    f'k:{{"name":"{app}"}}': {
                        ".": {},
                        "f:image": {},
                        "f:imagePullPolicy": {},
                        "f:livenessProbe": {
                            ".": {},
                            "f:failureThreshold": {},
                            "f:httpGet": {".": {}, "f:path": {}, "f:port": {}, "f:scheme": {}},
                            "f:periodSeconds": {},
                            "f:successThreshold": {},
                            "f:timeoutSeconds": {},
                        },
                        "f:name": {},
                        "f:ports": {
                            ".": {},
                            'k:{"containerPort":8080,"protocol":"TCP"}': {
                                ".": {},
                                "f:containerPort": {},
                                "f:name": {},
                                "f:protocol": {},
                            },
                        },
                        "f:readinessProbe": {
                            ".": {},
                            "f:failureThreshold": {},
                            "f:httpGet": {".": {}, "f:path": {}, "f:port": {}, "f:scheme": {}},
                            "f:periodSeconds": {},
                            "f:successThreshold": {},
                            "f:timeoutSeconds": {},
                        },
                        "f:resources": {
                            ".": {},
                            "f:limits": {".": {}, "f:memory": {}},
                            "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}},
                        },
                        "f:securityContext": {
                            ".": {},
                            "f:allowPrivilegeEscalation": {},
                            "f:readOnlyRootFilesystem": {},
                            "f:runAsNonRoot": {},
                        },
                        "f:terminationMessagePath": {},
                        "f:terminationMessagePolicy": {},
                    }
                },
                "f:dnsPolicy": {},
                "f:enableServiceLinks": {},
                "f:restartPolicy": {},
                "f:schedulerName": {},
                "f:securityContext": {},
                "f:terminationGracePeriodSeconds": {},
            },
        },
    }
    kubelet_fields = {
        "manager": "kubelet",
        "operation": "Update",
        "apiVersion": "v1",
        "time": BASE_TIME,
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:status": {
                "f:conditions": {
                    f'k:{{"type":"{kind}"}}': {
                        ".": {},
                        "f:lastProbeTime": {},
                        "f:lastTransitionTime": {},
                        "f:status": {},
                        "f:type": {},
                    }
                    for kind in (
                        "ContainersReady",
                        "Initialized",
                        "PodReadyToStartContainers",
                        "Ready",
                    )
                },
                "f:containerStatuses": {},
                "f:hostIP": {},
                "f:hostIPs": {},
                "f:phase": {},
                "f:podIP": {},
                "f:podIPs": {".": {}, 'k:{"ip":"10.244.0.0"}': {".": {}, "f:ip": {}}},
                "f:startTime": {},
            }
        },
        "subresource": "status",
    }
    probe = {
        "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    container = {
        "name": app,
        "image": image,
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "resources": {
            "limits": {"memory": memory},
            "requests": {"cpu": cpu, "memory": memory},
        },
        "livenessProbe": probe,
        "readinessProbe": probe,
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
        "securityContext": {
            "runAsNonRoot": True,
            "readOnlyRootFilesystem": True,
            "allowPrivilegeEscalation": False,
        },
    }
    tolerations = [
        {
            "key": "node.kubernetes.io/not-ready",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
        {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
    ]
    return controller_fields, kubelet_fields, container, {"tolerations": tolerations}


def pod(
    name: str,
    *,
    namespace: str = "default",
    node: str | None = "node-1",
    app: str = "web",
    labels: Mapping[str, str] | None = None,
    cpu: str = "250m",
    memory: str = "256Mi",
    image: str = "registry.k8s.io/e2e-test-images/agnhost:2.53",
    seed: int = 0,
) -> Object:
    """A Running pod of the ReplicaSet `<app>-<hash>`, about 4 KB of JSON (Pending when
    `node` is None). `labels` are added to the workload's own (`app`, `pod-template-hash`)."""
    controller_fields, kubelet_fields, container, shared = _workload_parts(app, image, cpu, memory)
    template_hash = _hex(app, 10)
    token = f"kube-api-access-{_suffix(name + 'token')}"
    created = seed % 86_400
    scheduled = node is not None
    metadata: Object = {
        "name": name,
        "generateName": f"{app}-{template_hash}-",
        "namespace": namespace,
        "uid": _uid(f"{namespace}/{name}"),
        "resourceVersion": "1",
        "creationTimestamp": _time(created),
        "labels": {"app": app, "pod-template-hash": template_hash, **(labels or {})},
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": f"{app}-{template_hash}",
                "uid": _uid(app),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        "managedFields": [controller_fields, kubelet_fields] if scheduled else [controller_fields],
    }
    mounts = [
        {
            "name": token,
            "readOnly": True,
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
        }
    ]
    spec: Object = {
        "volumes": [
            {
                "name": token,
                "projected": {
                    "sources": [
                        {
                            "serviceAccountToken": {
                                "expirationSeconds": 3607,
                                "path": "token",
                            }
                        },
                        {
                            "configMap": {
                                "name": "kube-root-ca.crt",
                                "items": [{"key": "ca.crt", "path": "ca.crt"}],
                            }
                        },
                        {
                            "downwardAPI": {
                                "items": [
                                    {
                                        "path": "namespace",
                                        "fieldRef": {
                                            "apiVersion": "v1",
                                            "fieldPath": "metadata.namespace",
                                        },
                                    }
                                ]
                            }
                        },
                    ],
                    "defaultMode": 420,
                },
            }
        ],
        "containers": [{**container, "volumeMounts": mounts}],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "serviceAccount": "default",
        "securityContext": {},
        "schedulerName": "default-scheduler",
        "tolerations": shared["tolerations"],
        "priority": 0,
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    if not scheduled:
        metadata["resourceVersion"] = "1"
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": metadata,
            "spec": spec,
            "status": {
                "phase": "Pending",
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "lastProbeTime": None,
                        "lastTransitionTime": _time(created),
                        "reason": "Unschedulable",
                        "message": "0/1 nodes are available: 1 node(s) were unschedulable.",
                    }
                ],
                "qosClass": "Burstable",
            },
        }
    spec["nodeName"] = node
    started = _time(created + 2)
    host = f"172.18.{seed // 250 % 250}.{seed % 250 + 2}"
    pod_ip = f"10.244.{seed // 250 % 250}.{seed % 250 + 2}"
    status: Object = {
        "phase": "Running",
        "conditions": [
            {
                "type": kind,
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": _time(created + offset),
            }
            for kind, offset in (
                ("PodReadyToStartContainers", 3),
                ("Initialized", 1),
                ("Ready", 9),
                ("ContainersReady", 9),
                ("PodScheduled", 1),
            )
        ],
        "hostIP": host,
        "hostIPs": [{"ip": host}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": started,
        "containerStatuses": [
            {
                "name": app,
                "state": {"running": {"startedAt": _time(created + 3)}},
                "lastState": {},
                "ready": True,
                "restartCount": 0,
                "image": image,
                "imageID": f"{image.split(':')[0]}@sha256:{_hex(image, 32) * 2}",
                "containerID": f"containerd://{_hex(name, 32) * 2}",
                "started": True,
                "volumeMounts": [{**mounts[0], "recursiveReadOnly": "Disabled"}],
            }
        ],
        "qosClass": "Burstable",
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


@lru_cache(maxsize=1)
def _node_images() -> tuple[Object, ...]:
    names = [
        "registry.k8s.io/etcd:3.5.15-0",
        "registry.k8s.io/kube-apiserver:v1.31.2",
        "registry.k8s.io/kube-controller-manager:v1.31.2",
        "registry.k8s.io/kube-proxy:v1.31.2",
        "registry.k8s.io/kube-scheduler:v1.31.2",
        "registry.k8s.io/coredns/coredns:v1.11.3",
        "registry.k8s.io/pause:3.10",
        "docker.io/kindest/kindnetd:v20241007-36f62932",
        "docker.io/kindest/local-path-provisioner:v20241108-5c6d2daf",
        "quay.io/prometheus/node-exporter:v1.8.2",
    ] + [f"registry.example.com/team-{i % 7}/service-{i}:1.{i % 13}.{i % 5}" for i in range(40)]
    return tuple(
        {
            "names": [
                f"{name.split(':')[0]}@sha256:{_hex(name, 32) * 2}",
                name,
            ],
            "sizeBytes": 10_000_000 + 1_234_567 * index,
        }
        for index, name in enumerate(names)
    )


def node(
    name: str,
    *,
    cpu: str = "8",
    memory: str = "32Gi",
    labels: Mapping[str, str] | None = None,
    ready: bool = True,
    seed: int = 0,
) -> Object:
    """A Ready worker node as its kubelet registers it, with 50 images (about 12 KB)."""
    address = f"172.18.{seed // 250 % 250}.{seed % 250 + 2}"
    heartbeat = _time(3600 + seed % 60)
    conditions = [
        {
            "type": kind,
            "status": "False",
            "lastHeartbeatTime": heartbeat,
            "lastTransitionTime": BASE_TIME,
            "reason": f"KubeletHas{reason}",
            "message": message,
        }
        for kind, reason, message in (
            ("MemoryPressure", "SufficientMemory", "kubelet has sufficient memory available"),
            ("DiskPressure", "NoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "SufficientPID", "kubelet has sufficient PID available"),
        )
    ]
    conditions.append(
        {
            "type": "Ready",
            "status": "True" if ready else "False",
            "lastHeartbeatTime": heartbeat,
            "lastTransitionTime": BASE_TIME,
            "reason": "KubeletReady" if ready else "KubeletNotReady",
            "message": "kubelet is posting ready status" if ready else "PLEG is not healthy",
        }
    )
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": _uid(f"node/{name}"),
            "resourceVersion": "1",
            "creationTimestamp": BASE_TIME,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "topology.kubernetes.io/zone": f"zone-{seed % 3}",
                **(labels or {}),
            },
            "annotations": {
                "kubeadm.alpha.kubernetes.io/cri-socket": "unix:///run/containerd/containerd.sock",
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "managedFields": [
                {
                    "manager": "kubelet",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": heartbeat,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:status": {
                            "f:conditions": {
                                f'k:{{"type":"{c["type"]}"}}': {"f:lastHeartbeatTime": {}}
                                for c in conditions
                            },
                            "f:images": {},
                        }
                    },
                    "subresource": "status",
                }
            ],
        },
        "spec": {
            "podCIDR": f"10.244.{seed % 250}.0/24",
            "podCIDRs": [f"10.244.{seed % 250}.0/24"],
            "providerID": f"kind://docker/kind/{name}",
        },
        "status": {
            "capacity": {
                "cpu": cpu,
                "ephemeral-storage": "102626232Ki",
                "hugepages-1Gi": "0",
                "hugepages-2Mi": "0",
                "memory": memory,
                "pods": "110",
            },
            "allocatable": {
                "cpu": cpu,
                "ephemeral-storage": "102626232Ki",
                "hugepages-1Gi": "0",
                "hugepages-2Mi": "0",
                "memory": memory,
                "pods": "110",
            },
            "conditions": conditions,
            "addresses": [
                {"type": "InternalIP", "address": address},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": _hex(name + "machine", 32),
                "systemUUID": _uid(name + "system"),
                "bootID": _uid(name + "boot"),
                "kernelVersion": "6.8.0-48-generic",
                "osImage": "Debian GNU/Linux 12 (bookworm)",
                "containerRuntimeVersion": "containerd://1.7.18",
                "kubeletVersion": "v1.31.2",
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "images": list(_node_images()),
        },
    }

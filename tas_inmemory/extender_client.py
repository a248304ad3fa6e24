"""The scheduler model's `Extender` over HTTP, with kube-scheduler's exact wire format.

`make run` calls the real extender this way, so the demo exercises the same HTTP path a real
kube-scheduler does (`NodeNames` bodies: `nodeCacheCapable: true`). Every failure (transport,
HTTP status, a body of the wrong shape) becomes `ExtenderError`, which the model handles as
kube-scheduler does (`ignorable`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import httpx

from tas.cluster.model import Pod
from tas.types import NodeName
from tas_inmemory.scheduler import ExtenderError, FilterAnswer


def pod_body(pod: Pod) -> dict[str, object]:
    """The parts of a v1 Pod the extender reads."""
    return {
        "metadata": {
            "name": pod.name,
            "namespace": pod.namespace,
            "uid": pod.uid,
            "labels": dict(pod.labels),
        }
    }


#: The weight the shipped kube-scheduler configuration gives the extender
#: (deploy/scheduler/kube-scheduler-config.yaml).
DEFAULT_EXTENDER_WEIGHT = 5


class HttpExtender:
    def __init__(
        self,
        url: str,
        *,
        weight: int = DEFAULT_EXTENDER_WEIGHT,
        ignorable: bool = True,
        timeout: float = 5.0,
        client: httpx.Client | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.weight = weight
        self.ignorable = ignorable
        self._timeout = timeout
        self._client = client or httpx.Client()

    def filter(self, pod: Pod, candidates: Sequence[NodeName]) -> FilterAnswer:
        answer = self._post("filter", {"Pod": pod_body(pod), "NodeNames": list(candidates)})
        if not isinstance(answer, dict):
            raise ExtenderError("filter answer is not an object")
        if answer.get("Error"):
            raise ExtenderError(f"extender error: {answer['Error']}")
        kept = {str(name) for name in answer.get("NodeNames") or ()}
        failed = {
            **_reasons(answer.get("FailedNodes")),
            **_reasons(answer.get("FailedAndUnresolvableNodes")),
        }
        return FilterAnswer([n for n in candidates if n in kept], failed)

    def prioritize(self, pod: Pod, candidates: Sequence[NodeName]) -> Mapping[NodeName, int]:
        answer = self._post("prioritize", {"Pod": pod_body(pod), "NodeNames": list(candidates)})
        if not isinstance(answer, list):
            raise ExtenderError("prioritize answer is not a list")
        scores: dict[NodeName, int] = {}
        for entry in answer:
            if isinstance(entry, dict) and isinstance(entry.get("Host"), str):
                try:
                    scores[NodeName(entry["Host"])] = int(entry.get("Score", 0))
                except (TypeError, ValueError) as error:
                    raise ExtenderError(f"bad score for {entry['Host']}: {error}") from error
        return scores

    def close(self) -> None:
        self._client.close()

    def _post(self, verb: str, body: Mapping[str, object]) -> object:
        try:
            response = self._client.post(
                f"{self.url}/scheduler/{verb}", json=body, timeout=self._timeout
            )
            response.raise_for_status()
            return response.json()
        except (httpx.HTTPError, ValueError) as error:
            raise ExtenderError(f"{verb}: {error}") from error


def _reasons(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}

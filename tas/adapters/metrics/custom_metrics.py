"""The `custom-metrics` source: `custom.metrics.k8s.io` through the Kubernetes API, as TAS reads it.

With prometheus-adapter installed, `GET /apis/custom.metrics.k8s.io/<version>/nodes/*/<metric>`
answers a MetricValueList with one item per node. The API group's preferred version is
discovered once (v1beta1 and v1beta2 items both carry `describedObject`, `timestamp`, `value`).
The kubernetes `ApiClient` is passed in, so tests and clusters differ only in its Configuration.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from tas.metrics.errors import MetricFetchError
from tas.metrics.source import Fetched, Sample
from tas.quantity import QuantityError, parse_quantity
from tas.types import MetricName, NodeName

GROUP = "custom.metrics.k8s.io"
VERSIONS = ("v1beta2", "v1beta1")


class CustomMetricsSource:
    kind = "custom-metrics"

    def __init__(self, api_client: Any, *, timeout: float = 5.0) -> None:
        self._api = api_client
        self._timeout = timeout
        self._version: str | None = None

    def fetch(self, names: frozenset[MetricName]) -> Fetched:
        if not names:
            return Fetched()
        try:
            version = self._discover()
        except MetricFetchError as error:
            return Fetched(errors={GROUP: str(error)})
        columns: dict[MetricName, dict[NodeName, Sample]] = {}
        errors: dict[str, str] = {}
        for name in sorted(names):
            try:
                columns[name] = _column(self._get(f"/apis/{GROUP}/{version}/nodes/*/{name}"))
            except MetricFetchError as error:
                errors[name] = str(error)
        return Fetched(columns=columns, errors=errors, ok=frozenset({GROUP, *columns}))

    def _discover(self) -> str:
        if self._version is None:
            group = self._get(f"/apis/{GROUP}")
            served = [v.get("version") for v in group.get("versions", []) if isinstance(v, dict)]
            preferred = (group.get("preferredVersion") or {}).get("version")
            if preferred in VERSIONS:
                self._version = preferred
            else:
                known = [v for v in VERSIONS if v in served]
                if not known:
                    raise MetricFetchError(f"{GROUP} serves {served}, none of {list(VERSIONS)}")
                self._version = known[0]
        return self._version

    def _get(self, path: str) -> dict[str, Any]:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            answer = self._call(path)
        except ApiException as error:
            raise MetricFetchError(f"GET {path}: HTTP {error.status} {error.reason}") from error
        except (HTTPError, OSError, ValueError) as error:
            raise MetricFetchError(f"GET {path}: {error}") from error
        if not isinstance(answer, dict):
            raise MetricFetchError(f"GET {path}: expected a JSON object")
        return answer

    def _call(self, path: str) -> Any:
        api = self._api
        headers = {"Accept": "application/json"}
        if hasattr(api, "param_serialize"):  # kubernetes >= 35: the openapi-generator 7 client
            method, url, headers, _, _ = api.param_serialize(
                "GET", path, header_params=headers, auth_settings=["BearerToken"]
            )
            response = api.call_api(
                method, url, header_params=headers, _request_timeout=self._timeout
            )
            response.read()
            return api.response_deserialize(response, {"200": "object"}).data
        return api.call_api(
            path,
            "GET",
            header_params=headers,
            auth_settings=["BearerToken"],
            response_type="object",
            _return_http_data_only=True,
            _preload_content=True,
            _request_timeout=self._timeout,
        )

    def close(self) -> None:
        self._api.close()


def _column(answer: dict[str, Any]) -> dict[NodeName, Sample]:
    column: dict[NodeName, Sample] = {}
    for item in answer.get("items") or []:
        try:
            described = item["describedObject"]
            if described.get("kind", "Node") != "Node":
                continue
            node = NodeName(described["name"])
            value = parse_quantity(item["value"])
            stamp = datetime.fromisoformat(item["timestamp"]).timestamp()
        except (KeyError, TypeError, AttributeError, ValueError, QuantityError) as error:
            raise MetricFetchError(f"malformed MetricValue {item!r}: {error}") from error
        if math.isfinite(value):
            column.setdefault(node, Sample(value, stamp))
    return column

"""The adapters: every module that talks to something outside the process through a client
(the Kubernetes API in `cluster`, Prometheus, node-exporter and the metrics APIs in `metrics`).
The pure core (the rest of `tas`) imports none of them, directly or not (an import-linter
contract in pyproject.toml)."""

"""Where the Kubernetes API is and who we are to it: the one place configuration is loaded.

Every component and the custom-metrics source connect the same way, in one order: the
kubeconfig file given (`--kubeconfig`, with `--context`); else, inside a pod, the
ServiceAccount (in-cluster configuration); else the default kubeconfig (`KUBECONFIG`,
`~/.kube/config`), as kubectl would. One `ApiClient` is built per process and shared by the
caches, the Lease elector and the custom-metrics source.

Errors:
    KubeConfigError (ValueError)   no usable configuration; the message says what was tried
"""

from __future__ import annotations

from pathlib import Path

from kubernetes import client, config


class KubeConfigError(ValueError):
    """No usable Kubernetes configuration."""


def load_api_client(
    kubeconfig: Path | None = None, *, context: str | None = None
) -> client.ApiClient:
    """An `ApiClient` for the configuration found first (see the module docstring)."""
    configuration = client.Configuration()
    try:
        if kubeconfig is not None:
            config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=str(kubeconfig), context=context, client_configuration=configuration
            )
        else:
            try:
                config.load_incluster_config(  # type: ignore[no-untyped-call]
                    client_configuration=configuration
                )
            except config.ConfigException:
                config.load_kube_config(  # type: ignore[no-untyped-call]
                    context=context, client_configuration=configuration
                )
    # The loaders raise several unrelated types (a missing file, bad YAML, no such context).
    except (config.ConfigException, OSError, ValueError, TypeError, KeyError) as error:
        where = f"kubeconfig {kubeconfig}" if kubeconfig else "in-cluster or default kubeconfig"
        raise KubeConfigError(f"cannot load Kubernetes configuration ({where}): {error}") from error
    return client.ApiClient(configuration)

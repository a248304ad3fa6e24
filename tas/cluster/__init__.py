"""The cluster: the interface (`interface`), its values (`model`), and the Kubernetes adapter.

`kubernetes` implements the interface on the official client with list+watch caches
(`informer`, conversion in `convert`), `kubeconfig` finds the API, and `leader` elects one
writer on a Lease. The other implementation, the in-memory cluster of `make run`, the
simulator and tests, stands beside the product in `tas_inmemory.cluster`.
"""

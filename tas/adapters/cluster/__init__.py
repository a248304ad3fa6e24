"""The Kubernetes adapter: `kubernetes` implements `tas.cluster.interface.Cluster` on the
official client with list+watch caches (`informer`, `heap`), `kubeconfig` finds the API, and
`leader` elects one writer on a Lease. Conversion from the API's JSON (`tas.cluster.convert`)
stays beside the model it builds."""

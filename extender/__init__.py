"""The scheduler extender: kube-scheduler's filter and prioritize verbs over HTTP.

Modules: `jsonscan` and `wire` decode ExtenderArgs and encode results in the exact Go wire
format; `decide` turns a pod, its policy and metric values into a decision; `service` is the
whole decision path without a transport (store, view, settings, estimates; recorded, counted,
logged), called by the routes, the simulator and the benchmarks; `decisions` keeps the recent
ones for `/debug/decisions`; `app` builds the FastAPI application; `tls` and
`server` serve it with uvicorn; `cert_reload` loads a renewed certificate into the live TLS
context, and `certificate` reads its expiry for `/metrics`; `runtime` is the process `tas
extender` and `python -m extender` run (the policies, herd control's feeds, the metric view,
the server and its TLS), once the command line (`tas_cli.extender`) has read and checked the
flags.
"""

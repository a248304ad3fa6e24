"""The dashboard of `make run`: the closed loop, watched and poked in a browser.

`recorder` keeps the live record (state, decision log, history) the run loop feeds once per
sync period; `controls` validates what a user may send; `app` serves the page, its vendored
static assets (uPlot) and the JSON API under `/api/` (docs/dashboard.md), with server-sent
events for live updates; `observer` tells the recorder each decision of the closed loop, and
`worlds` builds what `tas run` shows (the health demo or a scenario) wired into that loop,
and `runtime` runs it on the page until stopped.
Wiring-level code like `tas_cli`: it reads the components' outputs (the extender's decision
log, the descheduler's cycle reports) and the in-memory cluster, and nothing in the product
imports it.
"""

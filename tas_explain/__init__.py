"""Explain in one room: why a pod runs where it does and whether it would move, what a node
looks like to every policy. The explanations as data and JSON (`tas_explain.explanation`), built
from plain values (`tas_explain.explain`) and printed as text (`tas_explain.render`), all three
pure; the Explainer that gathers one world's facts for them (`tas_explain.facts`), what a dry
descheduler cycle says about a pod (`tas_explain.move`), keeping that dry run out of the logs
(`tas_explain.quiet`), and the Explainer over a real cluster's parts that `tas explain` asks
(`tas_explain.cluster`). The page's panel (dashboard) and the command (`tas_cli.explain`) call
them."""

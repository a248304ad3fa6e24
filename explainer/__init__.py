"""Explain in one room: why a pod runs where it does and whether it would move, what a node
looks like to every policy. The explanations as data and JSON (`explainer.explanation`), built
from plain values (`explainer.explain`) and printed as text (`explainer.render`), all three
pure; the Explainer that gathers one world's facts for them (`explainer.facts`), what a dry
descheduler cycle says about a pod (`explainer.move`), keeping that dry run out of the logs
(`explainer.quiet`), and the Explainer over a real cluster's parts that `tas explain` asks
(`explainer.cluster`). The page's panel (dashboard) and the command (`tas_cli.explain`) call
them."""

"""Explanations of a live world: the Explainer (`explainer.facts`), what a dry descheduler
cycle says about a pod (`explainer.move`), and keeping that dry run out of the logs
(`explainer.quiet`), and the Explainer over a real cluster's parts that `tas explain` asks
(`explainer.cluster`). The explanations themselves, pure, are `tas.explain`'s."""

"""Explanations of a live world: the Explainer (`explainer.facts`), what a dry descheduler
cycle says about a pod (`explainer.move`), and keeping that dry run out of the logs
(`explainer.quiet`). The explanations themselves, pure, are `tas.explain`'s."""

"""`tas replay`: a policy, and every contender, against a cluster's recorded history.

`history` (a window as values per step, the staleness rule), `evaluate` (the replay: rule
engine and breaker per step) and `scenario` (a window as a simulator scenario) are pure;
`prometheus` reads the history with range queries; `timeline` draws PNGs when matplotlib is
installed; `report` prints the summary and the comparison and writes the scenario file.
"""

"""Speed and scale benchmarks (`make bench`).

Each `bench_*.py` module has a `main() -> None` that prints its figures, each next to a floor
measured in the same run and the ratio, because these machines are noisy: absolute times
mean little, ratios against a floor measured seconds apart mean a lot.
"""

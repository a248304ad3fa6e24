"""Printing figures the same way in every benchmark: value, floor, ratio, goal, verdict."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    name: str
    value: float
    unit: str
    floor: float | None = None
    floor_name: str = ""
    #: The goal as a maximum ratio to the floor, or as a maximum (or minimum) absolute value.
    max_ratio: float | None = None
    max_value: float | None = None
    min_value: float | None = None

    @property
    def ratio(self) -> float | None:
        if self.floor is None or self.floor == 0:
            return None
        return self.value / self.floor

    @property
    def met(self) -> bool:
        checks: list[bool] = []
        if self.max_ratio is not None and self.ratio is not None:
            checks.append(self.ratio <= self.max_ratio)
        if self.max_value is not None:
            checks.append(self.value <= self.max_value)
        if self.min_value is not None:
            checks.append(self.value >= self.min_value)
        return all(checks)


def print_figure(figure: Figure) -> None:
    parts = [f"{figure.name}: {figure.value:.3f} {figure.unit}"]
    if figure.floor is not None:
        parts.append(f"floor ({figure.floor_name}) {figure.floor:.3f} {figure.unit}")
        if figure.ratio is not None:
            parts.append(f"ratio {figure.ratio:.2f}x")
    goals = []
    if figure.max_ratio is not None:
        goals.append(f"ratio <= {figure.max_ratio}x")
    if figure.max_value is not None:
        goals.append(f"<= {figure.max_value} {figure.unit}")
    if figure.min_value is not None:
        goals.append(f">= {figure.min_value} {figure.unit}")
    if goals:
        parts.append(f"goal {' and '.join(goals)}: {'MET' if figure.met else 'MISSED'}")
    print("  " + " | ".join(parts), flush=True)

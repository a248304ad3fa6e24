"""The charts (`tas simulate`'s) tell every contender apart: each two contenders' colours at least
30 apart in CIELAB (CIE76; psi-profile-60s' purple and the pink beside it were 28), and ours
at least 40 from every other."""

from __future__ import annotations

import itertools
import math

from matplotlib.colors import to_rgb

from tas_simulator.charts import contender_colour
from tas_simulator.contenders import CONTENDERS


def lab(colour: str) -> tuple[float, float, float]:
    """sRGB to CIELAB (D65)."""

    def linear(u: float) -> float:
        return u / 12.92 if u <= 0.04045 else ((u + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(u) for u in to_rgb(colour))
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def test_every_two_contenders_are_told_apart_and_ours_most() -> None:
    colours = {name: lab(contender_colour(name)) for name in CONTENDERS}
    for (a, ca), (b, cb) in itertools.combinations(colours.items(), 2):
        assert math.dist(ca, cb) >= 30, (a, b, math.dist(ca, cb))
    for name, colour in colours.items():
        if name != "ours":
            assert math.dist(colour, colours["ours"]) >= 40, name

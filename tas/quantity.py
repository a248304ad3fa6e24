"""Kubernetes quantity strings ("500m", "1.5", "2Ki", "1e3") as floats.

Used for policy targets (an extension of TAS's integer targets) and for pod resource requests.
"""

from __future__ import annotations

import math
import re

_SUFFIXES: dict[str, float] = {
    "": 1.0,
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
    "Ei": 2.0**60,
}

_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:\d+\.?\d*|\.\d+))(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])"
    r"|(?P<exponent>[eE][+-]?\d+))?$"
)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(text: str | int | float) -> float:
    """Return the value of a quantity; raise `QuantityError` for anything else."""
    if isinstance(text, bool):
        raise QuantityError(f"{text!r} is not a quantity")
    if isinstance(text, int | float):
        value = float(text)
    else:
        match = _QUANTITY.match(text.strip())
        if match is None:
            raise QuantityError(f"{text!r} is not a quantity (e.g. 5, 0.5, 500m, 2Ki)")
        value = float(match["number"])
        if match["exponent"]:
            value *= 10.0 ** int(match["exponent"][1:])
        else:
            value *= _SUFFIXES[match["suffix"] or ""]
    if not math.isfinite(value):
        raise QuantityError(f"{text!r} is not a finite number")
    return value

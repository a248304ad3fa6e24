"""Keeping the collector off the caches: a component's heap is mostly records that live as long
as the process does.

A 150,000-pod cache is a million and more objects the cyclic garbage collector tracks. CPython
walks all of them in every full collection, and while a LIST fills the cache those come every
time the long-lived objects have grown by a quarter: measured on the scale benchmark's world,
more than half of the first LIST's CPU. `gc.freeze()` moves every object alive now into a
permanent generation no collection walks; an object frozen so is still freed as soon as nothing
refers to it (a replaced record goes at once), only a reference cycle among frozen objects
would stay.

So `settle_heap(done=False)` freezes after each LIST page (cheap: it moves lists, not objects),
and `settle_heap(done=True)`, once the LIST is complete, brings everything back, collects what
cycles the pages froze, and freezes the survivors. Records that replace them later (watch
events) go through the generations as usual.
"""

from __future__ import annotations

import gc
import threading

_lock = threading.Lock()


def settle_heap(*, done: bool) -> None:
    """See the module docstring. Process-wide: only a component's wiring asks for it."""
    with _lock:
        if done:
            gc.unfreeze()
            gc.collect()
        gc.freeze()

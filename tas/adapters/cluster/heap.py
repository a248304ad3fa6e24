"""Keeping the collector off the caches: a component's heap is mostly records that live as long
as the process does.

A 150,000-pod cache is a million and more objects the cyclic garbage collector tracks. CPython
walks all of them in every full collection, and while a LIST fills the cache those come every
time the long-lived objects have grown by a quarter: measured on the scale benchmark's world,
more than half of the first LIST's CPU. `gc.freeze()` moves every object alive now into a
permanent generation no collection walks; an object frozen so is still freed as soon as nothing
refers to it (a replaced record goes at once), only a reference cycle among frozen objects
would stay.

So `settle_heap` freezes after each LIST page but the last (cheap: it moves lists, not
objects), and after the last page brings everything back, collects what cycles the pages froze,
and freezes the survivors. Records that replace them later (watch events) go through the
generations as usual.

A LIST of a single page (at most 500 objects) is left alone: it froze nothing, and its records
are too few to slow a collection, while the full collection would cost the whole process heap's
walk for nothing (about 0.1 s in a large process, once per cache).
"""

from __future__ import annotations

import gc
import threading

_lock = threading.Lock()


def settle_heap(pages: int, done: bool) -> None:
    """After page number `pages` of a LIST (`done` on its last); see the module docstring.
    Process-wide: only a component's wiring asks for it."""
    if done and pages == 1:
        return
    with _lock:
        if done:
            gc.unfreeze()
            gc.collect()
        gc.freeze()

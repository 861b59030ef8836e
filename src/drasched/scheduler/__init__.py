"""The batch scheduler: cache -> snapshot -> session -> actions -> decisions.

``cache`` follows the store's watch; ``snapshot`` turns it into per-cycle vectors, gangs,
queues and DRA state; ``cycle.run_cycle`` (pure) builds a ``session`` and runs the
configured ``actions`` with the ``plugins``; ``controller`` is the only module doing I/O.
Queues: ``queues`` (specs), ``fairshare`` (the math), ``accounting`` (usage),
``queuestatus`` (what is written). DRA accounting dimensions: ``devices``; claims: ``claims``.
"""

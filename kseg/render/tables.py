"""Text tables (the ``tabulate`` package), loaded when the first table is printed.

Importing tabulate costs ~4 ms and, through its version lookup, importlib.metadata
(~12 ms): more than a short ``kseg dump`` spends on its own work, for output most
dumps never print (index and snapshot entries in text form).
"""

from __future__ import annotations

from typing import Any

from kseg.printable import printable


def tabulate(rows: Any, *args: Any, **kwargs: Any) -> str:
    """``tabulate.tabulate`` itself (same arguments, same text), with text from the data in
    cells and headers escaped (``kseg.printable``)."""
    from tabulate import tabulate as table  # late: see the module's comment

    rows = [[printable(c) if isinstance(c, str) else c for c in row] for row in rows]
    if isinstance(kwargs.get("headers"), (list, tuple)):
        kwargs["headers"] = [printable(h) if isinstance(h, str) else h for h in kwargs["headers"]]
    return table(rows, *args, **kwargs)

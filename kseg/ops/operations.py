"""The operations that can be split (plan / run / merge, ``kseg.ops.executors``), by name:
the one table the executors' tests and ``kseg spark`` enumerate."""

from __future__ import annotations

from kseg.ops import (compact_split, convert_split, diff, dump_split, export, find, index_split, salvage, stats, txn,
                      verify)
from kseg.ops.executors import Operation

SPLITTABLE: dict[str, Operation] = {op.name: op for op in (
    verify.OPERATION, stats.OPERATION, find.OPERATION, dump_split.OPERATION, txn.OPERATION, diff.OPERATION,
    *convert_split.CONVERSIONS_SPLIT.values(), compact_split.OPERATION, salvage.OPERATION, index_split.OPERATION,
    export.OPERATION)}

"""The log layer: bytes <-> batches and records, files <-> segments and partitions.

``decode`` is the pure-Python reference reader, ``fast`` dispatches to the C
accelerator ``_speedups`` (or to ``decode``), ``encode`` builds batches,
``records`` turns a batch into records, ``segment`` opens files and folders,
``atomic`` writes outputs all-or-nothing.
"""

"""kseg: read, verify and convert Apache Kafka log segment files.

The public API: open a segment, a partition folder or a log directory, iterate
typed batches and their records, and build batches.

    >>> import kseg
    >>> seg = kseg.open_segment("00000000000000000000.log")
    >>> for batch in seg.batches():
    ...     for record in kseg.batch_records(batch):
    ...         print(record.offset, record.key, record.value)

The names load on first use (PEP 562), so that ``import kseg`` costs nothing
until something is asked of it: the ``kseg`` command relies on that to take
over Ctrl-C before its first heavy import.
"""

import importlib as _importlib
from typing import Any as _Any

from kseg.lazy import load as _load

__version__ = "0.1.0"

# public name -> the module that defines it
_PUBLIC = {
    **dict.fromkeys(
        ("CorruptBatchError", "CrcMismatchError", "DataError", "DecompressionError", "DecompressionLimitError",
         "InputError", "KsegError", "TruncatedError", "UnsupportedCodecError"), "kseg.errors"),
    "encode": "kseg.log",  # kseg.encode.build_v2_batch & co.: the public builders
    "batch_records": "kseg.log.records",
    # the reading objects: files and folders, with records(), to_arrow(), to_pandas()
    **dict.fromkeys(("LogDir", "Partition", "Segment", "TopicRecord", "open_log_dir", "open_partition",
                     "open_segment"), "kseg.api"),
    **dict.fromkeys(("Batch", "Header", "Record", "make_record"), "kseg.model"),
    "build_partition": "kseg.ops.build",  # kseg build as a function: records or JSON lines in, a partition out
}

__all__ = sorted(_PUBLIC)

# Library code never activates a plugin registry: the first public name activates
# $KSEG_PLUGIN_REGISTRY, with the reader of registry files (kseg.ops.registry, above the codecs).
_USE_ENVIRONMENT_REGISTRY = "kseg.ops.registry:use_environment_registry"


def __getattr__(name: str) -> _Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'kseg' has no attribute {name!r}")
    _load(_USE_ENVIRONMENT_REGISTRY)()
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names and the module's own dunders (not its imports, nor loaded subpackages)."""
    return sorted({*__all__, *(n for n in globals() if n.startswith("__"))})

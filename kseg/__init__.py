"""kseg: read, verify and convert Apache Kafka log segment files.

The public API: open a segment, a partition folder or a log directory, iterate
typed batches and their records, and build batches.

    >>> import kseg
    >>> seg = kseg.open_segment("00000000000000000000.log")
    >>> for batch in seg.batches():
    ...     for record in kseg.batch_records(batch):
    ...         print(record.offset, record.key, record.value)
"""

from kseg.errors import (
    CorruptBatchError,
    CrcMismatchError,
    DataError,
    DecompressionError,
    DecompressionLimitError,
    InputError,
    KsegError,
    TruncatedError,
    UnsupportedCodecError,
)
from kseg.log import encode  # noqa: F401 - kseg.encode.build_v2_batch & co.: the public builders
from kseg.log.records import batch_records
from kseg.log.segment import Partition, Segment, open_log_dir, open_partition, open_segment
from kseg.model import Batch, Header, Record, make_record
from kseg.ops import registry as _registry  # noqa: F401 - installs the plugin registry reader in kseg.codecs.plugins

__version__ = "0.1.0"

__all__ = [
    "Batch",
    "CorruptBatchError",
    "CrcMismatchError",
    "DataError",
    "DecompressionError",
    "DecompressionLimitError",
    "Header",
    "InputError",
    "KsegError",
    "Partition",
    "Record",
    "Segment",
    "TruncatedError",
    "UnsupportedCodecError",
    "batch_records",
    "make_record",
    "open_log_dir",
    "open_partition",
    "open_segment",
]

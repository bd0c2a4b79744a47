"""Record lines of a batch at once: the C twin (``_format``) when built, else ``lines``.

``KSEG_PURE_PYTHON=1`` forces the Python reference, as for the readers.
"""

from __future__ import annotations

import os
from typing import Any

from kseg.formats.attributes import CODEC_MASK, CONTROL_MASK, DELETE_HORIZON_MASK, TIMESTAMP_TYPE_MASK, TRANSACTIONAL_MASK
from kseg.model import Batch
from kseg.render import lines

try:
    from kseg.render import _format  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - exercised when the extension is not built
    _format = None
else:
    _format.configure_batches(Batch._fields, TRANSACTIONAL_MASK, CONTROL_MASK, DELETE_HORIZON_MASK, TIMESTAMP_TYPE_MASK,
                              CODEC_MASK)

ACCELERATED = _format is not None and not os.environ.get("KSEG_PURE_PYTHON")

_impl: Any = _format if ACCELERATED else lines
jsonl_records = _impl.jsonl_records
text_records = _impl.text_records
kafka_records = _impl.kafka_records
kafka_batch_line = _impl.kafka_batch_line
# dump --fields: the chosen fields of each record line
jsonl_fields = _impl.jsonl_fields
text_fields = _impl.text_fields
# Lines straight from kseg.log.records.batch_spans (C only: without the accelerator there are no spans).
jsonl_spans = _format.jsonl_spans if ACCELERATED else None
text_spans = _format.text_spans if ACCELERATED else None
kafka_spans = _format.kafka_spans if ACCELERATED else None
# Batch and record lines of runs of uncompressed v0/v1 messages (kseg.log.records.plain_run, C only);
# the per-message lines are their reference.
jsonl_plain_run = _format.jsonl_plain_run if ACCELERATED else None
text_plain_run = _format.text_plain_run if ACCELERATED else None
kafka_plain_run = _format.kafka_plain_run if ACCELERATED else None
# The lines of runs of v2 batches shown without their records (kseg.log.records.v2_header_run, C only);
# the per-batch lines are their reference.
text_header_run = _format.text_header_run if ACCELERATED else None
jsonl_header_run = _format.jsonl_header_run if ACCELERATED else None
kafka_header_run = _format.kafka_header_run if ACCELERATED else None
# ... and with their records' lines (kseg.log.records.v2_record_run, C only); the per-batch lines and
# *_spans are their reference.
text_record_run = _format.text_record_run if ACCELERATED else None
jsonl_record_run = _format.jsonl_record_run if ACCELERATED else None
kafka_record_run = _format.kafka_record_run if ACCELERATED else None

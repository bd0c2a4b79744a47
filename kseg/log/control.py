"""Control records (spec §3.4): what a control batch's single record says."""

from __future__ import annotations

from dataclasses import dataclass

from kseg.errors import CorruptBatchError
from kseg.formats.attributes import CONTROL_ABORT, CONTROL_COMMIT, CONTROL_TYPE_NAMES
from kseg.layouts import CONTROL_KEY, END_TXN_MARKER, Layout
from kseg.model import Record


@dataclass(frozen=True)
class ControlInfo:
    """A control record's key (its type: a transaction's COMMIT or ABORT, a KRaft record ...) and,
    for a transaction marker, the coordinator epoch its value holds."""

    type_id: int
    version: int
    coordinator_epoch: int | None = None  # COMMIT/ABORT markers only

    @property
    def type_name(self) -> str:
        return CONTROL_TYPE_NAMES.get(self.type_id, "UNKNOWN")

    @property
    def is_txn_marker(self) -> bool:
        return self.type_id in (CONTROL_ABORT, CONTROL_COMMIT)

    def as_json(self) -> dict:
        out: dict = {"type": self.type_name, "type_id": self.type_id, "version": self.version}
        if self.coordinator_epoch is not None:
            out["coordinator_epoch"] = self.coordinator_epoch
        return out


def control_info(record: Record) -> ControlInfo:
    """Decode a control record's key (and a transaction marker's value)."""
    key = _at_least(record.key, CONTROL_KEY, "control record key")
    version, type_id = CONTROL_KEY.struct.unpack_from(key)
    if version < 0:
        raise CorruptBatchError("negative control record key version", found=version)
    if type_id not in CONTROL_TYPE_NAMES:
        type_id = -1
    if type_id in (CONTROL_ABORT, CONTROL_COMMIT):
        value = _at_least(record.value, END_TXN_MARKER, "transaction marker value")
        value_version, epoch = END_TXN_MARKER.struct.unpack_from(value)
        if value_version < 0:  # Kafka's EndTransactionMarker takes it for corruption, as it does the key's
            raise CorruptBatchError("negative transaction marker value version", found=value_version)
        return ControlInfo(type_id, version, epoch)
    return ControlInfo(type_id, version)


def _at_least(data: bytes | None, layout: Layout, what: str) -> bytes:
    """``data``, checked to be at least as long as ``layout``."""
    if data is None or len(data) < layout.size:
        raise CorruptBatchError(f"{what} too short", expected=f"{layout.size} bytes",
                                found="null" if data is None else f"{len(data)} bytes")
    return data

"""Control record key and the transaction-marker value (spec §3.4).

    key:   version int16 (0) | type int16 (0 ABORT, 1 COMMIT, 2.. KRaft types)
    value: version int16 (0) | coordinator_epoch int32   (ABORT/COMMIT only)
"""

from construct import Int16sb, Int32sb, Struct

ControlRecordKey = Struct(
    "version" / Int16sb,
    "type" / Int16sb,
)

EndTxnMarkerValue = Struct(
    "version" / Int16sb,
    "coordinator_epoch" / Int32sb,
)

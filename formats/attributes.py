"""Attribute bits and codec ids of every message format, defined once.

Pure constants (spec §2.2, §3.2, §2.4, §9.1). Every module that tests or sets
an attribute bit or names a codec imports it from here.
"""

# Codec ids, attribute bits 0-2 (legacy and v2), bits 0-1 for pre-0.8.
CODEC_NONE = 0
CODEC_GZIP = 1
CODEC_SNAPPY = 2
CODEC_LZ4 = 3
CODEC_ZSTD = 4
CODEC_PLUGIN = 5  # KIP-984: the plugin id sits in PLUGIN_ID_MASK (v2 only)

CODEC_NAMES = {
    CODEC_NONE: "none",
    CODEC_GZIP: "gzip",
    CODEC_SNAPPY: "snappy",
    CODEC_LZ4: "lz4",
    CODEC_ZSTD: "zstd",
}

CODEC_MASK = 0x07
KAFKA07_CODEC_MASK = 0x03

# Timestamp type: bit 3 of legacy v1 and v2 attributes.
TIMESTAMP_TYPE_MASK = 0x08
NO_TIMESTAMP_TYPE = -1
CREATE_TIME = 0
LOG_APPEND_TIME = 1
TIMESTAMP_TYPE_NAMES = {
    NO_TIMESTAMP_TYPE: "NoTimestampType",
    CREATE_TIME: "CreateTime",
    LOG_APPEND_TIME: "LogAppendTime",
}

# v2 batch attributes (int16).
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40
PLUGIN_ID_SHIFT = 8
PLUGIN_ID_MASK = 0x0F00
MAX_PLUGIN_ID = 15

# Special values (spec §3.1).
NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

# Magic values.
MAGIC_V0 = 0
MAGIC_V1 = 1
MAGIC_V2 = 2

# Control record types (spec §3.4).
CONTROL_ABORT = 0
CONTROL_COMMIT = 1
CONTROL_TYPE_NAMES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}

"""How each Apache Kafka release line's kafka-dump-log.sh prints, as data: one row per line.

``kseg dump --format kafka --kafka-version LINE`` (and ``kseg-dump-log``) reproduce the
DumpLogSegments of one release line byte for byte. Where the lines' tools print differently,
the difference is a named field of :class:`DumpLogRelease`; the renderers and decoders read
fields of the row and never compare version strings. Each row was checked against the newest
patch release of its line (``checked``) on files real brokers wrote (``fixtures/kafka-*``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["DEFAULT", "KAFKA_VERSIONS", "NEWEST_ALIAS", "RELEASES", "WITHOUT_TXN_INDEX_EMPTY", "DumpLogRelease", "as_release",
           "kafka_release"]


@dataclass(frozen=True)
class DumpLogRelease:
    """One release line's kafka-dump-log.sh: what it prints where the lines differ."""

    line: str  # "2.8", "3.6", ..., "4.4": what --kafka-version takes
    checked: str  # the patch release whose tool the row was held to ("2.8.2")
    # the line after a .log file's "Dumping" line: "Starting offset: N" (2.8) or "Log starting offset: N"
    log_start_label: str = "Log starting offset"
    # a v2 batch line's "deleteHorizonMs: OptionalLong..." (3.0 and later)
    delete_horizon: bool = True
    # codec names as the Java enum's names (NONE, GZIP: 2.8) or its lower-case names
    codec_names_upper: bool = False
    # each record line repeats its batch's fields (isValid, crc, baseOffset ... position: 2.8)
    record_batch_fields: bool = False
    # a stray "}" after a v0/v1 record line's crc (3.x)
    legacy_crc_brace: bool = False
    # --skip-record-metadata: " payload:" keeps its space (3.x) or starts the line with "| " when no key does
    payload_space_without_metadata: bool = False
    # non-consecutive offsets: a file's first record is compared with -1 too (else it only sets the start)
    gap_from_file_start: bool = False
    # non-consecutive offsets: the pairs in a map sorted by offset (else prepended to a list: newest first)
    gaps_sorted: bool = False
    # the order the tool's map of file paths lists the files in: "java" (HashMap) or "scala" (mutable.Map)
    path_map_order: str = "java"
    # .index mismatches: in a map by offset, highest first (else prepended to a list)
    index_mismatches_by_offset: bool = False
    # "The following indexed offsets are not found in :PATH" (else "... not found in the log.")
    not_found_names_file: bool = False
    # the decoders' texts to print, most preferred first, where a record has them ("classic": 2.8/3.6's
    # Scala offsets formatter; "offsets-v3": 2.8's, which knows offset-commit values up to version 3 and
    # stops at a later one; "3": Kafka 3.x's texts; "transaction-state-names": 4.4's transaction-log
    # JSON with the state's name; "transaction-version-lookup": 4.0's, which stops at a transaction.version
    # level it does not know; "definitions-4.0" to "definitions-4.3": the records and fields a later
    # release added or changed, as a tool that reads by that release's definitions prints them;
    # "definitions-2.8": 2.8's, which reads KRaft metadata records by its preview's definitions); none: the
    # newest line's JSON
    decoder_texts: tuple[str, ...] = ()
    # a KRaft LeaderChange control record as "LeaderChange: {...}" (else "controlType: LEADER_CHANGE(2)")
    leader_change_text: bool = True
    # producer snapshots: "lastTimestamp: N" after currentTxnFirstOffset (3.0 and later)
    snapshot_last_timestamp: bool = True
    # producer snapshots: currentTxnFirstOffset as a Scala Option (None, Some(N): 2.8) or an OptionalLong
    snapshot_scala_option: bool = False
    # producer snapshots: a space ends an entry without batch metadata (3.x; Kafka 4 ends it after lastTimestamp)
    snapshot_space_without_batch: bool = False
    # producer snapshots read by the generated ProducerSnapshot message (4.0 on), not by a Schema: what the tool says
    # of one it cannot read (kseg.companions.kafka_snapshot)
    snapshot_generated_reader: bool = False
    # remote log metadata: ", txnIdxEmpty=..." in segment metadata (4.0 and later: the storage-api jar's text)
    remote_txn_index_empty: bool = True
    # --files: a name without a "." stops the tool (the Scala tool's suffix lookup fails: 2.8-4.2), else
    # it is an unknown file, skipped with a line
    suffixless_name_stops: bool = False
    # the package of the tool's own decoder classes (StringDecoder, ...): kafka.serializer's up to 3.6
    decoder_class_package: str = "org.apache.kafka.tools.api."
    # kafka.serializer's decoder classes still taken, swapped for the new ones with a notice on stdout (3.9)
    serializer_decoders_deprecated: bool = False
    # .checkpoint files (KRaft snapshots, 3.0 and later) dumped, else an unknown file skipped with a line
    dumps_checkpoints: bool = True
    # --max-message-size read (and a bad one met) at each .log file too (2.8), not only at .index files
    max_message_size_at_logs: bool = False
    # what --version prints, where it is more than the release (2.8 adds its commit)
    version_text: str | None = None
    # the tool's control record types by id, where they differ from later releases' (2.8: LEADER_CHANGE was 3,
    # QUORUM_REASSIGNMENT 2, and no snapshot records); a type not listed prints as UNKNOWN with the record's id
    control_types: tuple[str, ...] | None = None

    def control_type_text(self, type_id: int, name: str) -> str:
        """``NAME(ID)`` of a control record type as the tool prints it (``name``: the newest release's)."""
        if self.control_types is None:
            return f"{name}({type_id})"
        if 0 <= type_id < len(self.control_types):
            return f"{self.control_types[type_id]}({type_id})"
        return f"UNKNOWN({type_id})"

    @property
    def texts(self) -> tuple[str, ...]:
        """The decoder texts to print, most preferred first: ``decoder_texts``, then those the row's
        other fields call for."""
        return self.decoder_texts + (() if self.remote_txn_index_empty else (WITHOUT_TXN_INDEX_EMPTY,))


#: the decoder text of remote log metadata without ", txnIdxEmpty=..." (remote_txn_index_empty False)
WITHOUT_TXN_INDEX_EMPTY = "remote-log-without-txn-index-empty"


_SERIALIZER = "kafka.serializer."  # the decoder classes' package up to Kafka 3.6 (deprecated in 3.9, gone in 4.0)

# Kafka 2.8 to 4.2's tool is the Scala kafka.tools.DumpLogSegments of the broker's jar; 4.3 rewrote it in
# Java (org.apache.kafka.tools.DumpLogSegments, in kafka-tools)
_3X = DumpLogRelease("3.9", "3.9.2", legacy_crc_brace=True, payload_space_without_metadata=True,
                     path_map_order="scala", decoder_texts=("3",), leader_change_text=False,
                     snapshot_space_without_batch=True, remote_txn_index_empty=False, suffixless_name_stops=True)
_4X = DumpLogRelease("4.3", "4.3.1", gap_from_file_start=True, gaps_sorted=True, index_mismatches_by_offset=True,
                     not_found_names_file=True, decoder_texts=("definitions-4.3",), snapshot_generated_reader=True)

#: every release line, oldest first
RELEASES: tuple[DumpLogRelease, ...] = (
    replace(_3X, line="2.8", checked="2.8.2", log_start_label="Starting offset", delete_horizon=False,
            codec_names_upper=True, record_batch_fields=True,
            decoder_texts=("offsets-v3", "classic", "definitions-2.8", "3"),
            snapshot_last_timestamp=False, snapshot_scala_option=True, decoder_class_package=_SERIALIZER,
            dumps_checkpoints=False, max_message_size_at_logs=True, version_text="2.8.2 (Commit:3146c6ff4a24cc24)",
            control_types=("ABORT", "COMMIT", "QUORUM_REASSIGNMENT", "LEADER_CHANGE")),
    replace(_3X, line="3.6", checked="3.6.2", decoder_texts=("classic", "3", "definitions-3.6"),
            decoder_class_package=_SERIALIZER),
    replace(_3X, serializer_decoders_deprecated=True, decoder_texts=("3", "definitions-3.9")),
    replace(_3X, line="4.0", checked="4.0.2", remote_txn_index_empty=True, snapshot_generated_reader=True,
            decoder_texts=("transaction-version-lookup", "definitions-4.0", "3")),
    replace(_3X, line="4.1", checked="4.1.2", remote_txn_index_empty=True, snapshot_generated_reader=True,
            decoder_texts=("definitions-4.1",), leader_change_text=True),
    replace(_3X, line="4.2", checked="4.2.2", remote_txn_index_empty=True, snapshot_generated_reader=True,
            decoder_texts=("definitions-4.2",), leader_change_text=True),
    _4X,
    replace(_4X, line="4.4", checked="4.4.0", decoder_texts=("transaction-state-names",)),
)

_BY_LINE = {r.line: r for r in RELEASES}
#: the name that means the newest line of its major release
NEWEST_ALIAS = "4"
#: what --kafka-version takes: the alias of the newest line first (the default), then every line, newest first
KAFKA_VERSIONS: tuple[str, ...] = (NEWEST_ALIAS, *(r.line for r in reversed(RELEASES)))
DEFAULT = RELEASES[-1]


def kafka_release(name: str) -> DumpLogRelease:
    """The row of a --kafka-version name ("4" is the newest 4.x line); KeyError for an unknown one."""
    if name == NEWEST_ALIAS:
        return max((r for r in RELEASES if r.line.split(".")[0] == NEWEST_ALIAS),
                   key=lambda r: tuple(map(int, r.line.split("."))))
    return _BY_LINE[name]


def as_release(release: "str | DumpLogRelease") -> DumpLogRelease:
    """A row, from itself or from its --kafka-version name."""
    return release if isinstance(release, DumpLogRelease) else kafka_release(release)

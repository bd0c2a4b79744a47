"""Decoder tables generated from Kafka's JSON message definitions by ``kseg.decoders.derive`` (``make schemas``):
one module per supported release, ``kafka_<release>``.

The decoders name the releases by role, here, never by number: a new release is its line in
``derive.RELEASES`` and the names below.
"""

from types import ModuleType

from kseg.decoders.generated import (
    kafka_2_8_2,
    kafka_3_6_2,
    kafka_3_9_2,
    kafka_4_0_2,
    kafka_4_1_2,
    kafka_4_2_2,
    kafka_4_3_1,
    kafka_4_4_0,
)

#: the newest release's definitions: what the decoders read
NEWEST = kafka_4_4_0
#: the 4.x releases before it, whose tools (--kafka-version 4.0 to 4.3) read by their own definitions
OLDER_4X = (kafka_4_0_2, kafka_4_1_2, kafka_4_2_2, kafka_4_3_1)
#: the 3.x line's definitions, for Kafka 3.x's own lines
KAFKA_3 = kafka_3_9_2
#: Kafka 3.6's, whose tool (--kafka-version 3.6) reads the metadata log by them
KAFKA_3_6 = kafka_3_6_2
#: the older lines' definitions, which the every-type corpus (oracle/record_types.py) is built from; the
#: decoders read those lines' records by KAFKA_3's and NEWEST's, but for 2.8's (KAFKA_2, below)
OLDER_LINES = (kafka_2_8_2, kafka_3_6_2)
#: the 2.x line's definitions, which Kafka 2.8's tool (--kafka-version 2.8) reads by: its KRaft preview's
#: metadata records (frame version 0, which no later release reads), the offset-commit and transaction-log
#: value versions it knows (it stops at a later one)
KAFKA_2 = kafka_2_8_2
#: every generated module, oldest first (the every-type corpus, oracle/record_types.py, is built from each)
MODULES = (*OLDER_LINES, kafka_3_9_2, *OLDER_4X, NEWEST)


def definitions_text(module: ModuleType) -> str:
    """The decoder text (kseg.kafka_releases decoder_texts) of a tool that reads by ``module``'s
    definitions: a record or field a later release added or changed reads as that tool reads it."""
    return "definitions-" + module.RELEASE.rsplit(".", 1)[0]


#: decoder text -> the definitions it reads by, for each older 4.x line
DEFINITIONS_TEXTS = {definitions_text(m): m for m in OLDER_4X}

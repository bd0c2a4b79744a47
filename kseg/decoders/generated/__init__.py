"""Decoder tables generated from Kafka's JSON message definitions by ``kseg.decoders.derive`` (``make schemas``):
one module per supported release, ``kafka_<release>``.

The decoders name the releases by role, here, never by number: a new release is its line in
``derive.RELEASES`` and the names below.
"""

from kseg.decoders.generated import kafka_3_9_2, kafka_4_0_2, kafka_4_1_2, kafka_4_2_2, kafka_4_3_1, kafka_4_4_0

#: the newest release's definitions: what the decoders read
NEWEST = kafka_4_4_0
#: the release line before it: its tool (and those of the older 4.x lines) print the records and
#: fields the newest added as unknown
PREVIOUS = kafka_4_3_1
#: the 3.x line's definitions, for Kafka 3.x's own lines
KAFKA_3 = kafka_3_9_2
#: every generated module, oldest first (the every-type corpus, oracle/record_types.py, is built from each)
MODULES = (kafka_3_9_2, kafka_4_0_2, kafka_4_1_2, kafka_4_2_2, kafka_4_3_1, kafka_4_4_0)
#: the decoder text (kseg.kafka_releases decoder_texts) of the tools that read by PREVIOUS's definitions:
#: a record or field only the newest defines reads as that tool reads it (an unknown record type,
#: an unknown tagged field left out)
PREVIOUS_TEXT = "definitions-" + PREVIOUS.RELEASE.rsplit(".", 1)[0]

"""Decoder tables generated from Kafka's JSON message definitions by ``kseg.decoders.derive`` (``make schemas``):
one module per supported release, ``kafka_<release>``."""

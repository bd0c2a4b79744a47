"""Declarative construct schemas of Kafka's on-disk formats (installed as ``kseg.formats``).

One module per format, named in Kafka's vocabulary. Pure declarations: no I/O,
no policy. The fast ``struct`` layouts used on hot paths are derived from these
schemas by ``kseg.layouts`` (through ``kseg.facts``, their numbers copied out as plain
Python so that reading a segment never imports construct; ``make facts``); tests prove
both agree on every fixture and real file, and that the copies are current.
"""

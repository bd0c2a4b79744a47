"""Declarative construct schemas of Kafka's on-disk formats (installed as ``kseg.formats``).

One module per format, named in Kafka's vocabulary. Pure declarations: no I/O,
no policy. The fast ``struct`` layouts used on hot paths are derived from these
schemas by ``kseg.layouts``; a test proves both agree on every fixture and real file.
"""

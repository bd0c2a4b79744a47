"""Renderers: turn what operations return into text, JSON lines or kafka-dump-log.sh lines."""

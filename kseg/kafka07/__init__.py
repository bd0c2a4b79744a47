"""The pre-0.8 (Kafka 0.7) message format."""

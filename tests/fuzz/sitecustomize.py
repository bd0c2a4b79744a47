"""Put on PYTHONPATH by `make test-sanitize` so every Python process loads the sanitizer build."""
import sanitize  # noqa: F401

# Two entry points: `make demo` (set up, run kseg on the shipped fixtures) and
# `make test` (set up, run the test suite). Both create .venv on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
KSEG := $(VENV)/bin/kseg
STAMP := $(VENV)/.installed

.PHONY: demo test bench bench-dump bench-write bench-spark bench-kafka fixtures kafka-corpus kafka-corpus-check kafka-cleaner-corpus kafka-live clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[test,spark,report]'
	$(PY) -m pip install -q -c constraints.txt -e examples/kseg-snappy-plugin -e examples/kseg-brotli-plugin
	touch $(STAMP)

demo: $(STAMP)
	$(KSEG) verify fixtures/logdir
	$(KSEG) dump --records fixtures/logdir/v2-headers-0
	$(KSEG) dump --records --format kafka --payload utf8 fixtures/logdir/compacted-v1-gzip-0
	$(KSEG) dump --records --format jsonl fixtures/logdir/v2-txn-0 | head -n 4
	$(KSEG) up-convert fixtures/logdir -o out/v2 --to-magic 2 --force
	$(KSEG) compact out/v2 -o out/compacted --include-active --force
	$(KSEG) verify --quick out/v2 out/compacted

test: $(STAMP)
	$(PY) fixtures/generate.py --check
	$(PY) fixtures/internal/build.py --check
	$(KSEG) verify fixtures/logdir
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) benchmarks/bench_read.py --clock cpu

bench-dump: $(STAMP)
	$(PY) benchmarks/bench_dump.py

bench-write: $(STAMP)
	$(PY) benchmarks/bench_write.py
	$(PY) benchmarks/bench_plugins.py

bench-spark: $(STAMP)
	$(PY) benchmarks/bench_spark.py

bench-kafka: $(STAMP)
	$(PY) benchmarks/bench_kafka_dump.py

# Kafka itself as the oracle (needs java and mvn; see oracle/README.md)
kafka-corpus: $(STAMP)
	$(PY) oracle/generate.py

kafka-corpus-check: $(STAMP)
	$(PY) oracle/generate.py --check

kafka-cleaner-corpus: $(STAMP)
	$(PY) tests/kafka/cleaning.py

kafka-live: $(STAMP)
	$(PY) -m pytest tests/kafka

fixtures: $(STAMP)
	$(PY) fixtures/generate.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis

# Two entry points: `make demo` (set up, run kseg on the shipped fixtures) and
# `make test` (set up, run the test suite). Both create .venv on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
KSEG := $(VENV)/bin/kseg
STAMP := $(VENV)/.installed

.PHONY: demo test check docs man facts schemas bench bench-dump bench-write bench-spark bench-jobs bench-kafka bench-export bench-quick fixtures kafka-corpus kafka-corpus-check kafka-cleaner-corpus kafka-convert-corpus kafka-tiered-corpus kafka-admin-corpus kafka-admin-corpus-check kafka-clients-corpus kafka-clients-corpus-check kafka-live clean test-sanitize fuzz-short fuzz-long

# Two installs: BASE is kseg alone with its own dependencies (what make demo needs), STAMP adds
# the extras the tests, Spark, the report and the docs need, and the example plugins (make test).
# pip's and setuptools' chatter goes to .venv/install.log; it is shown only when a step fails.
BASE := $(VENV)/.base
EXTRAS := test spark report docs
INSTALL_LOG := $(VENV)/install.log
QUIET = >>$(INSTALL_LOG) 2>&1 || { cat $(INSTALL_LOG); exit 1; }
define EXTRA_REQUIREMENTS
import sys, tomllib
extras = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]
print("\n".join(sorted({r for e in sys.argv[1:] for r in extras[e]})))
endef
export EXTRA_REQUIREMENTS

$(BASE): pyproject.toml constraints.txt
	@echo "make: installing kseg into $(VENV) (pip's output in $(INSTALL_LOG))"
	@$(PYTHON) -m venv $(VENV)
	@: > $(INSTALL_LOG)
	@$(PY) -m pip install -q --upgrade pip $(QUIET)
	@$(PY) -m pip install -q -c constraints.txt -e . $(QUIET)
	@touch $@

$(STAMP): $(BASE)
	@echo "make: installing the extras ($(EXTRAS)) and the example plugins into $(VENV)"
	@$(PY) -c "$$EXTRA_REQUIREMENTS" $(EXTRAS) > $(VENV)/extras.txt
	@$(PY) -m pip install -q -c constraints.txt -r $(VENV)/extras.txt $(QUIET)
	@$(PY) -m pip install -q -c constraints.txt -e examples/kseg-snappy-plugin -e examples/kseg-brotli-plugin $(QUIET)
	@touch $@

# The C accelerator is rebuilt when its sources change. Its extensions are optional (kseg runs
# without a compiler), so a compile error would otherwise leave the previous build in place
# unnoticed: here it stops make, with the compiler's messages.
C_SOURCES := $(wildcard kseg/*.c kseg/*.h kseg/*/*.c kseg/*/*.h)
BUILT := $(VENV)/.built
define STALE_EXTENSIONS
import glob, os, sys, tomllib
stale = []
for ext in tomllib.load(open("pyproject.toml", "rb"))["tool"]["setuptools"]["ext-modules"]:
    built = glob.glob(ext["name"].replace(".", "/") + ".*.so")
    newest = max(os.path.getmtime(f) for f in ext["sources"] + ext.get("depends", []))
    if not built or os.path.getmtime(built[0]) < newest:
        stale.append(ext["name"])
sys.exit("make: not built from the current sources: " + " ".join(stale) if stale else 0)
endef
export STALE_EXTENSIONS

$(BUILT): $(BASE) $(C_SOURCES)
	@if ! command -v cc >/dev/null 2>&1; then echo "make: no C compiler: kseg runs its pure-Python code"; \
	elif ! $(PY) -c "$$STALE_EXTENSIONS" 2>/dev/null; then \
		$(PY) -m pip install -v -c constraints.txt --no-deps -e . >$(VENV)/build.log 2>&1 || { cat $(VENV)/build.log; exit 1; }; \
		$(PY) -c "$$STALE_EXTENSIONS" || { grep -E "error:" $(VENV)/build.log; exit 1; }; \
	fi
	@touch $@

demo: $(BUILT)
	$(KSEG) verify fixtures/logdir
	$(KSEG) dump --records fixtures/logdir/v2-headers-0
	$(KSEG) dump --records --format kafka --payload utf8 fixtures/logdir/v2-gzip-0/00000000000000000000.log
	$(KSEG) dump --records --format jsonl fixtures/logdir/v2-txn-0 | head -n 4
	$(KSEG) up-convert fixtures/logdir -o out/v2 --to-magic 2 --force
	$(KSEG) compact out/v2 -o out/compacted --include-active --force
	$(KSEG) verify --quick out/v2 out/compacted
	@echo
	@echo "kseg is installed in $(VENV): run $(KSEG) --help, or 'source $(VENV)/bin/activate' and then kseg --help."
	@echo "make test installs the test extras and runs the suite; docs/getting-started.md walks through an incident."

# Everything, in three runs: the tests of make check on every core; the live matrices of kseg's
# own child processes (marked children by tests/conftest.py) on every core; then the rest of the
# live tier (servers, JVMs) on LIVE_JOBS workers, each module whole in one worker (--dist
# loadfile), since a module's tests share its servers and brokers.
LIVE_JOBS ?= 2
test: $(STAMP) $(BUILT)
	$(PY) fixtures/generate.py --check
	$(PY) fixtures/internal/build.py --check
	$(KSEG) verify fixtures/logdir
	$(PY) -m pytest -m "not live" -n auto --durations=15
	$(PY) -m pytest -m "live and children" -n auto --durations=15
	$(PY) -m pytest -m "live and not children" -n $(LIVE_JOBS) --dist loadfile --durations=25

# The fast tier while working: unit, property and corpus tests, on every core, with a quarter
# of the property tests' examples; no servers, no JVM, no whole-command matrices of child
# processes (the tests marked live by tests/conftest.py; make test runs them).
check: $(STAMP) $(BUILT)
	HYPOTHESIS_PROFILE=check $(PY) -m pytest -m "not live" -n auto -p no:cacheprovider

# The documentation site (docs/, mkdocs.yml) into build/site, strictly: a broken link or anchor,
# or a page left out of the nav, fails it. tests/test_docs.py builds it in make test too.
docs: $(STAMP)
	$(PY) -m mkdocs build --strict -d build/site

# kseg.1, the manual page, written from the click commands (man -l kseg.1).
man: $(STAMP)
	$(PY) -m kseg.cli.manpage > kseg.1

# kseg.facts: the schemas' numbers as plain Python (reading a segment never imports construct);
# rewrite after changing formats/ (tests/test_schemas.py fails until then).
facts: $(STAMP)
	$(PY) -m kseg.facts.derive

# kseg.decoders.generated: the decoders' record schemas, from the JSON message definitions in
# the jars of the supported Kafka releases (fetched by mvn into .cache/schemas on first use);
# tests/test_decoder_schemas.py fails when the committed modules differ from what they say.
schemas: $(STAMP)
	$(PY) -m kseg.decoders.derive

bench: $(STAMP) $(BUILT)
	$(PY) benchmarks/bench_read.py --clock cpu

bench-dump: $(STAMP) $(BUILT)
	$(PY) benchmarks/bench_dump.py

bench-write: $(STAMP) $(BUILT)
	$(PY) benchmarks/bench_write.py
	$(PY) benchmarks/bench_plugins.py

bench-spark: $(STAMP) $(BUILT)
	$(PY) benchmarks/bench_spark.py

bench-jobs: $(STAMP) $(BUILT)
	$(PY) benchmarks/bench_jobs.py

bench-kafka: $(STAMP) $(BUILT)
	$(PY) benchmarks/bench_kafka_dump.py

bench-export: $(STAMP) $(BUILT)
	$(PY) benchmarks/bench_export.py

# verify --quick as a whole process against a bare walk (600 MB segments: generated once, a few minutes)
bench-quick: $(STAMP) $(BUILT)
	$(PY) benchmarks/bench_quick_process.py

# Kafka itself as the oracle (needs java and mvn; see oracle/README.md)
kafka-corpus: $(STAMP)
	$(PY) oracle/generate.py

kafka-corpus-check: $(STAMP)
	$(PY) oracle/generate.py --check

kafka-cleaner-corpus: $(STAMP)
	$(PY) tests/kafka/cleaning.py

kafka-convert-corpus: $(STAMP)
	$(PY) tests/kafka/converting.py

kafka-tiered-corpus: $(STAMP)
	$(PY) tests/kafka/tiered.py

# A broker driven by Kafka's admin tools and Java clients (SCRAM, ACLs, quotas, tokens, a dynamic quorum,
# KIP-848, share and streams groups, transactions v2), one corpus per release (a broker each, one at a time):
# fixtures/kafka-admin/<the release's line>, 4.3 for 4.3.1 (release 4) (needs java, javac, mvn)
ADMIN_RELEASES = 3.9 4.0 4.1 4.2 4 4.4
kafka-admin-corpus: $(STAMP)
	for r in $(ADMIN_RELEASES); do d=$$r; [ $$r = 4 ] && d=4.3; \
	  $(PY) tests/kafka/admin.py --release $$r --write fixtures/kafka-admin/$$d || exit 1; done

kafka-admin-corpus-check: $(STAMP)
	for d in fixtures/kafka-admin/*/; do $(PY) tests/kafka/admin.py --check $$d || exit 1; done

# librdkafka's and the Java client's traffic, one corpus per release (a broker each, one at a time)
CLIENTS_RELEASES = 2.8 3.6 3.9 4.0 4.1 4.2 4 4.4
kafka-clients-corpus: $(STAMP)
	for r in $(CLIENTS_RELEASES); do $(PY) tests/kafka/clients.py --release $$r --write fixtures/kafka-clients/$$r || exit 1; done

kafka-clients-corpus-check: $(STAMP)
	for r in $(CLIENTS_RELEASES); do $(PY) tests/kafka/clients.py --check fixtures/kafka-clients/$$r || exit 1; done

kafka-live: $(STAMP)
	$(PY) -m pytest tests/kafka

fixtures: $(STAMP)
	$(PY) fixtures/generate.py

# --------------------------------------------------------------------------- robustness
# The C accelerator built with AddressSanitizer and UndefinedBehaviorSanitizer into
# build/sanitize (the in-place build of .venv stays as it is), loaded instead of it by
# tests/fuzz/sanitize.py in every Python process; python itself is not instrumented,
# hence the preloaded ASan runtime and PYTHONMALLOC=malloc (ASan sees every buffer).
SAN_DIR := build/sanitize
FUZZ_DIR := build/fuzz
SO_SUFFIX = $(shell $(PY) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
SAN_OPTS := ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 PYTHONMALLOC=malloc
SAN_ENV = KSEG_SPEEDUPS_SO=$(CURDIR)/$(SAN_DIR)/_speedups$(SO_SUFFIX) LD_PRELOAD=$$(cat $(SAN_DIR)/preload) \
	PYTHONPATH=$(CURDIR)/tests/fuzz $(SAN_OPTS)
FUZZ_ENV = KSEG_SPEEDUPS_SO=$(CURDIR)/$(FUZZ_DIR)/_speedups$(SO_SUFFIX) LD_PRELOAD=$$(cat $(FUZZ_DIR)/preload) \
	$(SAN_OPTS)
# The tests that drive kseg's C with data (every C entry point through the fuzz corpus, the twins
# held equal, every fixture, real file and client corpus read, dumped, verified, exported and
# salvaged, every command on every log directory a broker wrote), against the ASan/UBSan build.
# Left to make test: the larger corpora's many more cases of the same paths (the kafka-dump-log
# drop-in, conversions), the tests of
# Python-only code, and programs that are not Python (Spark's and Kafka's JVMs, the S3, GCS and
# Azure servers, Chromium), which must not run with the ASan runtime preloaded and have no C of
# kseg's; and the memory ceilings (ASan's shadow memory and quarantine are no dump's).
SAN_TESTS := accelerator api checksums codecs column_runs dump_fields edges export fuzz_corpus golden jvm_utf8 \
	kafka_admin_corpus kafka_clients_corpus kafka_golden realdata record_types_corpus render_bulk robustness salvage \
	span_columns tools_diff tools_find tools_stats index_check what_kafka_wrote
SAN_PYTEST := -p no:cacheprovider -n auto $(patsubst %,tests/test_%.py,$(SAN_TESTS)) \
	-k 'not bomb and not flat_memory'
FUZZ_SECONDS ?= 8

$(SAN_DIR)/preload: kseg/log/_speedups.c kseg/log/_spans.h kseg/log/_sketch.h kseg/_checksum.c kseg/_crc32.h kseg/_sequence.h kseg/render/_format.c tests/fuzz/build.sh $(STAMP)
	PYTHON=$(PY) tests/fuzz/build.sh sanitize $(SAN_DIR)

$(FUZZ_DIR)/preload: kseg/log/_speedups.c kseg/log/_spans.h kseg/log/_sketch.h kseg/_checksum.c kseg/_crc32.h kseg/_sequence.h kseg/render/_format.c tests/fuzz/build.sh $(STAMP)
	PYTHON=$(PY) tests/fuzz/build.sh fuzz $(FUZZ_DIR)
	$(PY) -m pip install -q -c constraints.txt atheris

test-sanitize: $(SAN_DIR)/preload
	$(SAN_ENV) $(PY) -c 'import kseg.log._speedups as s, kseg.log.fast as f; \
		assert f.ACCELERATED and s.__file__.startswith("$(CURDIR)/$(SAN_DIR)/"), s.__file__; print("sanitized:", s.__file__)'
	$(SAN_ENV) $(PY) -c 'import kseg._checksum as c, kseg.checksums as k; \
		assert k.ACCELERATED and c.__file__.startswith("$(CURDIR)/$(SAN_DIR)/"), c.__file__; print("sanitized:", c.__file__)'
	$(SAN_ENV) $(PY) -c 'import kseg.render._format as c, kseg.render.bulk as k; \
		assert k.ACCELERATED and c.__file__.startswith("$(CURDIR)/$(SAN_DIR)/"), c.__file__; print("sanitized:", c.__file__)'
	$(SAN_ENV) $(PY) -m pytest $(SAN_PYTEST)

# Every fuzz target (the TARGETS table of tests/fuzz/targets.py) for FUZZ_SECONDS under atheris,
# from the committed seeds; new inputs go to a scratch folder, a finding fails the target (its
# input is under build/fuzz-findings).
fuzz-short: $(FUZZ_DIR)/preload
	@for t in $$(PYTHONPATH=tests/fuzz $(PY) -c 'import targets; print(*targets.TARGETS)'); do \
		rm -rf build/fuzz-scratch/$$t; mkdir -p build/fuzz-scratch/$$t build/fuzz-findings/$$t; \
		echo "fuzz $$t ($(FUZZ_SECONDS) s)"; \
		$(FUZZ_ENV) $(PY) tests/fuzz/run.py $$t -max_total_time=$(FUZZ_SECONDS) -timeout=20 -max_len=16384 \
			-artifact_prefix=build/fuzz-findings/$$t/ build/fuzz-scratch/$$t tests/fuzz/corpus/$$t \
			> build/fuzz-scratch/$$t.log 2>&1 || { tail -n 40 build/fuzz-scratch/$$t.log; exit 1; }; \
		grep -E '^#[0-9]+[[:space:]]+DONE' build/fuzz-scratch/$$t.log | tail -n 1; \
	done

# The long campaign (by hand, in the background): FUZZ_CPU seconds of CPU over every target.
FUZZ_CPU ?= 3600
FUZZ_UNTIL ?= $(shell echo $$(( $$(date +%s) + 7200 )))
fuzz-long: $(FUZZ_DIR)/preload
	$(FUZZ_ENV) nice -n 19 $(PY) tests/fuzz/campaign.py --cpu-seconds $(FUZZ_CPU) --until $(FUZZ_UNTIL) \
		build/fuzz-campaign

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis

# Hearth: `make run` starts the daemon on the embedded store, `make test` runs the whole suite.
# Both install the Debian packages they need when missing.

DEBS      := libuv1-dev libsqlite3-dev libxxhash-dev libsimdjson-dev libssl-dev libpq-dev libre2-dev libjemalloc-dev openssl pkg-config python3 netcat-openbsd
# The tests also run the PostgreSQL backend against a throwaway PostgreSQL 15 cluster (Tests/Postgres/cluster.sh).
TEST_DEBS := postgresql-15 postgresql-client-15
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
SWIFT     ?= swift
HOST      ?= 127.0.0.1
PORT      ?= 7411
DATA_DIR  ?= ./data
ARGS      ?=

.PHONY: all deps test-deps build release run test test-swift test-python typecheck-python bench fuzz fmt clean install install-built

all: build

deps:
	@missing=""; for p in $(DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "make: installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

# PostgreSQL's server for the tests, without the cluster Debian's package would create and start on port 5432
# (the tests start their own on a free loopback port and remove it afterwards).
test-deps:
	@missing=""; for p in $(TEST_DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "make: installing Debian packages for the tests:$$missing"; \
	  $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-common && \
	  $(SUDO) sed -i 's/^#* *create_main_cluster *=.*/create_main_cluster = false/' /etc/postgresql-common/createcluster.conf && \
	  $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

run: release
	.build/release/hearthd --host $(HOST) --port $(PORT) --data-dir $(DATA_DIR) $(ARGS)

# The whole suite: unit tables, storage conformance (PostgreSQL included), engine, loop, and the real hearthd over
# TCP. One throwaway PostgreSQL cluster serves every test (each in a schema of its own); it is stopped and
# removed however the suite ends.
test: deps test-deps
	$(SWIFT) build --build-tests
	@pg=/tmp/hearth-test-pg-$$$$; \
	trap 'Tests/Postgres/cluster.sh stop '"$$pg" EXIT; trap 'exit 130' INT; trap 'exit 143' TERM HUP; \
	dsn=$$(Tests/Postgres/cluster.sh start "$$pg") || exit 1; \
	echo "make: PostgreSQL for the tests at $$dsn"; \
	export HEARTH_TEST_POSTGRES="$$dsn"; \
	$(SWIFT) test --skip-build && $(MAKE) --no-print-directory test-python

test-python: typecheck-python
	@if [ -d clients/python/tests ]; then \
	  HEARTHD_BIN=$(CURDIR)/.build/debug/hearthd python3 -m unittest discover -s clients/python/tests -t clients/python -v; \
	fi

# mypy --strict on the Python package; mypy is installed from PyPI when missing and PyPI is reachable,
# else the check is skipped with a message (it is a development tool, not a dependency of the package).
typecheck-python:
	@if ! python3 -m mypy --version >/dev/null 2>&1; then \
	  echo "make: installing mypy from PyPI for the Python type check"; \
	  python3 -m pip install --quiet mypy >/dev/null 2>&1 || true; \
	fi; \
	if python3 -m mypy --version >/dev/null 2>&1; then \
	  cd clients/python && python3 -m mypy --strict hearth; \
	else \
	  echo "make: SKIPPED the Python type check: mypy is not installed and could not be installed from PyPI"; \
	fi

# Fuzz targets (Sources/HearthFuzz) with libFuzzer, FUZZ_SECONDS each. New corpus entries go to
# .build/fuzz-corpus/<target>, crashes to .build/fuzz-artifacts/<target>/: copy a crash into Tests/Fuzz/<target>/
# once fixed, and `make test` replays it from then on.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= framer request value query recovery
fuzz: deps
	$(SWIFT) build -c release --build-path .build/fuzz -Xswiftc -sanitize=fuzzer -Xswiftc -use-ld=lld --product hearth-fuzz
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p .build/fuzz-corpus/$$t .build/fuzz-artifacts/$$t; \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	  SWIFT_BACKTRACE=enable=no .build/fuzz/release/hearth-fuzz $$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -artifact_prefix=.build/fuzz-artifacts/$$t/ .build/fuzz-corpus/$$t Tests/Fuzz/$$t || exit 1; \
	done

# The load generator against HOST:PORT (a daemon started with `make run` or elsewhere).
bench: release
	.build/release/hearth bench --host $(HOST) --port $(PORT) $(ARGS)

# `make install PREFIX=/usr/local` builds in release mode and installs hearthd and hearth into $(DESTDIR)$(PREFIX)/bin,
# the systemd unit and the sample configuration into $(DESTDIR)$(PREFIX)/share/hearth (docs/operations.md "Install").
# `make install-built` installs binaries already built into BUILD_DIR without building (BUILD_DIR=.build/debug for tests).
PREFIX    ?= /usr/local
BUILD_DIR ?= .build/release
INSTALL   ?= install
install: release install-built

install-built:
	@test -x $(BUILD_DIR)/hearthd -a -x $(BUILD_DIR)/hearth || { echo "make: no hearthd and hearth in $(BUILD_DIR) (run make release)"; exit 1; }
	$(INSTALL) -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/hearth
	$(INSTALL) -m 0755 $(BUILD_DIR)/hearthd $(BUILD_DIR)/hearth $(DESTDIR)$(PREFIX)/bin/
	$(INSTALL) -m 0644 contrib/hearthd.service contrib/hearthd.env $(DESTDIR)$(PREFIX)/share/hearth/

clean:
	rm -rf .build

# Hearth: `make run` starts the daemon on the embedded store, `make test` runs the whole suite.
# Both install the Debian packages they need when missing.

DEBS      := libuv1-dev libsqlite3-dev libxxhash-dev libsimdjson-dev pkg-config python3
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
SWIFT     ?= swift
HOST      ?= 127.0.0.1
PORT      ?= 7411
DATA_DIR  ?= ./data
ARGS      ?=

.PHONY: all deps build release run test test-swift test-python bench fmt clean

all: build

deps:
	@missing=""; for p in $(DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "make: installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

run: release
	.build/release/hearthd --host $(HOST) --port $(PORT) --data-dir $(DATA_DIR) $(ARGS)

# The whole suite: unit tables, storage conformance, engine, loop, and the real hearthd over TCP.
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build
	@$(MAKE) --no-print-directory test-python

test-python:
	@if [ -d clients/python/tests ]; then \
	  HEARTHD_BIN=$(CURDIR)/.build/debug/hearthd python3 -m unittest discover -s clients/python/tests -t clients/python -v; \
	fi

bench: release
	.build/release/hearth bench $(ARGS)

clean:
	rm -rf .build

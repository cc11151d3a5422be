# pgrelay — the two commands of a new user are `make demo` and `make test`.

GO ?= go
export PATH := /usr/local/go/bin:$(PATH)

# PostgreSQL majors the integration tests run against (PGRELAY_TEST_MAJORS).
TEST_MAJORS ?= 15,17,18
ALL_MAJORS := 14,15,16,17,18
GOTESTFLAGS ?= -race -timeout 45m
BENCH ?= .
BENCHFLAGS ?= -benchmem -timeout 60m
# End-to-end benchmarks (integration/bench_test.go, docs/benchmarks.md): servers
# at production durability, pgbench -s 20 and -s 100 (about 20 minutes, 1.5 GB
# of disk per copy), run once; BENCH_E2E='^$$' leaves them out.
BENCH_E2E ?= ^Benchmark(Drain|Snapshot)$$

comma := ,
majors = $(subst $(comma), ,$(1))

.PHONY: all build test test-matrix bench lint setup demo clean

all: build

## build: compile bin/pgrelay
build:
	$(GO) build -o bin/pgrelay ./cmd/pgrelay

## setup: fetch the PostgreSQL servers of TEST_MAJORS, install MariaDB and the tests' locales
setup:
	bash scripts/fetch-postgres.sh $(call majors,$(TEST_MAJORS))
	bash scripts/install-mariadb.sh
	bash scripts/install-locales.sh

## test: unit and integration tests, race detector on, PostgreSQL 15, 17 and 18 (pgoutput protocols 3 and 4)
test: setup
	PGRELAY_TEST_MAJORS=$(TEST_MAJORS) $(GO) test $(GOTESTFLAGS) ./...

## test-matrix: the same against every supported PostgreSQL major
test-matrix:
	$(MAKE) test TEST_MAJORS=$(ALL_MAJORS)

## bench: run the benchmarks (BENCH=regexp to choose), then the end-to-end ones once (BENCH_E2E)
bench: setup
	PGRELAY_TEST_MAJORS=$(TEST_MAJORS) $(GO) test -run '^$$' -bench '$(BENCH)' -skip '$(BENCH_E2E)' $(BENCHFLAGS) ./...
	PGRELAY_TEST_MAJORS=$(TEST_MAJORS) $(GO) test -run '^$$' -bench '$(BENCH_E2E)' -benchtime=1x -v $(BENCHFLAGS) ./integration/

## lint: gofmt must list nothing, go vet must pass
lint:
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

## demo: replicate a sample database end to end (scripts/demo.sh)
demo: build setup
	bash scripts/demo.sh

clean:
	rm -rf bin

# Braid. Two commands on a fresh machine with Go: `make demo` and `make test`.
GO ?= go
PKGS := ./...

.PHONY: all build test test-windows demo bench bench-go bench-peer proto lint fmt

all: build test

build:
	$(GO) build $(PKGS)

## test: vet, then every test with the race detector. The timeout is a safety
## net above go test's 10 minutes: the graph package's crash property tests take
## about 2 minutes on a quiet 2-core machine and over 6 on a loaded one.
test:
	$(GO) vet $(PKGS)
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

## test-windows: the tests of the SQLite store (files, locks, WAL fsyncs), the agent
## and the braid command as
## Windows binaries under Wine (installed from Debian when missing).
test-windows:
	scripts/windows-test.sh

## demo: the "delete files older than 5 days" agent on the scripted model;
## it asks (y/N) before deleting. DEMO_FLAGS=-yes or -no answers for you.
demo:
	$(GO) run ./cmd/braid demo $(DEMO_FLAGS)

## bench: go test benchmarks, then the figures table against the Strands
## TypeScript peer run in the same session (needs node and npm for the peer),
## and b4 in rounds paired with the peer's b4 (installed in PEER_WORK).
PEER_WORK ?= /tmp/braid-peer/strands-ts
bench: bench-go
	@peer=$$(PEER_WORK_DIR=$(PEER_WORK) scripts/peer-bench.sh 2>/dev/null) && \
	  $(GO) run ./bench -peer "$$peer" -peer-dir $(PEER_WORK) || \
	  { echo "(peer benchmark unavailable: Braid figures only)"; $(GO) run ./bench; }

bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./agent/

bench-peer:
	scripts/peer-bench.sh

## proto: regenerate the committed protobuf code (installs protoc if missing).
proto:
	scripts/gen-proto.sh

## lint: formatting, vet, staticcheck (installed by scripts/tools.sh, with the
## checks staticcheck.conf names: its defaults plus the doc comment forms), and
## the code and its tests building (vetted) for Windows (pure Go: no cgo
## anywhere in the store; the kill -9 process tests are Unix-only), with the
## overlay the Windows test run builds with (scripts/windows-overlay.sh), so
## that run reuses what this compiled.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	"$$(scripts/tools.sh)/staticcheck" $(PKGS)
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) vet -overlay "$$(scripts/windows-overlay.sh)" $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go' | grep -v '\.pb\.go$$')

# statsblob — common tasks. `make test` is what CI runs.
GO        ?= go
FUZZTIME  ?= 30s
BENCHTIME ?= 1s

.PHONY: test vet conformance fuzz bench bench-all accuracy demo fmt test-export e2e diff gen-goldens gen-coverage

## test: vet and run every test with the race detector (CI runs this)
test: vet
	$(GO) test -race ./...

vet:
	$(GO) vet ./...

## test-export: vet and test (-race) the nested module export/ (Prometheus, OpenTelemetry, the collector)
test-export:
	cd export && $(GO) vet ./... && $(GO) test -race ./...

## e2e: statsblob-collector against a real Prometheus server on 127.0.0.1 (installs
##      Debian's prometheus package with apt-get if the command is missing)
e2e:
	@command -v prometheus >/dev/null 2>&1 || { \
	  sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$sudo apt-get update -qq && \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus; }
	cd export && STATSBLOB_E2E=1 $(GO) test -count=1 -run TestE2E -v ./e2e

## conformance: run the C reference scenarios and compare byte for byte, and the
##              generated scenarios against the C's digests (testdata/conformance/generated)
conformance:
	$(GO) test -run TestConformance -v ./cmd/statsblob/internal/scenario
	$(GO) test -run TestGeneratedGoldens ./cmd/statsblob/internal/scenario/gen

# The differential test: generated scenarios through a C reference build and the Go runner.
SEEDS        ?= 1:10000
GOLDEN_SEEDS ?= 1:300
J            ?= 2
DIGESTS      := testdata/conformance/generated/digests.txt

## diff: run the scenarios of SEEDS through the C build CREF and the Go runner, report and
##       shrink differences (make diff CREF=path/to/cref [SEEDS=1:10000] [J=2])
diff:
	@test -n "$(CREF)" || { echo "make diff CREF=path/to/your/c-reference"; exit 2; }
	$(GO) run ./cmd/statsblob diff -cref $(CREF) -seeds $(SEEDS) -j $(J)

## gen-goldens: record the C's digests of GOLDEN_SEEDS for TestGeneratedGoldens and
##              recompute the PENDING seeds (make gen-goldens CREF=path/to/cref)
gen-goldens:
	@test -n "$(CREF)" || { echo "make gen-goldens CREF=path/to/your/c-reference"; exit 2; }
	rm -f $(DIGESTS)
	$(GO) run ./cmd/statsblob diff -cref $(CREF) -seeds $(GOLDEN_SEEDS) -j $(J) -shrink 0 -goldens $(DIGESTS) > /dev/null || test -s $(DIGESTS)
	$(GO) test -count=1 -run TestGeneratedGoldens ./cmd/statsblob/internal/scenario/gen -update-pending

## gen-coverage: the scenario generator's coverage table over SEEDS
gen-coverage:
	$(GO) run ./cmd/statsblob gen -coverage -seeds $(SEEDS)

## fuzz: run every fuzz target for FUZZTIME each (make fuzz FUZZTIME=10m)
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$t"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

## bench: the C-vs-Go table, the parallel scaling, the collector path beside the peers' decoders
##        and the peers table (make bench BENCHTIME=3s; CREF=path/to/your/c-reference runs the
##        C-vs-Go table alternately with the Go twins)
bench:
	$(GO) run ./bench/cmd/compare -benchtime $(BENCHTIME) $(if $(CREF),-cref $(CREF) -rounds 5)
	$(GO) test -run '^$$' -bench Parallel -benchmem -cpu 1,2 -benchtime $(BENCHTIME) ./bench
	$(GO) test -run '^$$' -bench Collector -benchmem -cpu 1 -benchtime $(BENCHTIME) ./bench
	cd bench/peers && $(GO) test -run '^$$' -bench Collector -benchmem -cpu 1 -benchtime $(BENCHTIME) .
	cd bench/peers && $(GO) run ./cmd/peers

## bench-all: every benchmark of every package
bench-all:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...

## accuracy: the long accuracy sweeps of the tests (STATSBLOB_LONG=1), then the t-digest rank
##           errors against exact quantiles: both clustering modes beside caio/go-tdigest (single
##           blobs, merged fleets, Sharded snapshots) and beside caio, influxdata/tdigest, DDSketch
##           and HDR at equal bytes on the six target streams (bench/peers' tdmodes);
##           make accuracy LONG=1 adds 10^7 samples
accuracy:
	STATSBLOB_LONG=1 $(GO) test -count=1 ./tdigest ./blob
	$(GO) run ./bench/cmd/accuracy $(if $(LONG),-long)
	cd bench/peers && $(GO) run ./cmd/tdmodes $(if $(LONG),-long)

demo:
	$(GO) run ./cmd/statsblob demo

fmt:
	gofmt -w $$(git ls-files '*.go')

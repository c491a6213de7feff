# statsblob — common tasks. `make test` is what CI runs.
GO        ?= go
FUZZTIME  ?= 30s
BENCHTIME ?= 1s

.PHONY: test long minver vet conformance fuzz bench bench-all accuracy demo fmt test-export e2e e2e-nats diff gen-goldens gen-coverage load load-durable load-accuracy fault

# RACE_PKGS are the packages whose code or tests share memory between
# goroutines (.ci/racepkgs: they import sync or sync/atomic, or run parallel
# subtests): make test runs them again under the race detector, which slows
# the single-goroutine sweeps of the other packages ten- to fifteenfold and
# finds nothing there.
RACE_PKGS = $(shell .ci/racepkgs)

## test: vet, every test with -short (long sweeps cut to a fixed set of seeds),
##       then the packages that use goroutines again with -race (CI runs this;
##       under 5 minutes on 2 cores)
test: vet
	$(GO) test -short ./...
	$(GO) test -short -race $(RACE_PKGS)

## long: every test at full length (every seed of the sweeps), without -race
long:
	$(GO) test -count=1 ./...

vet:
	$(GO) vet ./...

# MINGO is the Go release the root module's go.mod names: the oldest that
# builds the library (it ranges over iterators: 1.23).
MINGO := $(shell sed -n 's/^go //p' go.mod)

## minver: build and vet the root module (its tests type-checked too) with the
##         Go release go.mod names (MINGO; GOTOOLCHAIN fetches it from the Go
##         proxy once), so a consumer on that release can use it. Test files
##         that need a newer standard library say so with //go:build go1.N,
##         which make vet's stdversion check holds every file to.
minver:
	GOTOOLCHAIN=go$(MINGO) $(GO) version
	GOTOOLCHAIN=go$(MINGO) $(GO) build ./...
	GOTOOLCHAIN=go$(MINGO) $(GO) vet ./...

## test-export: vet and test (-race) the nested module export/ (Prometheus, OpenTelemetry, the collector)
test-export:
	cd export && $(GO) vet ./... && $(GO) test -race ./...

## fault: issue 21's fault test for FAULTTIME (60s): shippers under load through a proxy that
##        drops, loses answers, duplicates and delays, the collector (-data-dir) SIGKILLed and
##        restarted twice; its totals must equal what the shippers recorded (make test-export
##        runs it for 3 s)
FAULTTIME ?= 60s
fault:
	cd export && $(GO) test -count=1 -timeout 5m -run 'TestFault$$' -v ./cmd/statsblob-collector -fault.d $(FAULTTIME)

## e2e: statsblob-collector on 127.0.0.1 against a real Prometheus (scraping, and remote
##      write from two collectors) and a real OpenTelemetry Collector (built from its Go
##      modules in export/e2e/otelcol); installs Debian's prometheus package with apt-get
##      if the command is missing
OTELCOL_BIN ?= $(CURDIR)/export/e2e/otelcol/otelcol
e2e:
	@command -v prometheus >/dev/null 2>&1 || { \
	  sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$sudo apt-get update -qq && \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus; }
	cd export/e2e/otelcol && $(GO) build -o $(OTELCOL_BIN) .
	cd export && STATSBLOB_E2E=1 OTELCOL=$(OTELCOL_BIN) $(GO) test -count=1 -timeout 15m -run TestE2E -v ./e2e

## load: statsblob-collector under load over loopback HTTP: blobs/s, POST latency p50/p99,
##       scrape time and RSS for 1, 8 and 64 posters, batches, and 10,000 aggregates, after
##       a baseline of net/http alone (read the body, answer 204) on the same CPU
##       (the collector pinned to CPU 0, the load generator to CPU 1; make load LOADTIME=10s)
LOADTIME ?= 5s
load:
	cd export && $(GO) build -o $(CURDIR)/.statsblob-load ./cmd/statsblob-load
	$$(command -v taskset >/dev/null && echo taskset -c 1) ./.statsblob-load -d $(LOADTIME) -server-cpus 0; \
	  status=$$?; rm -f ./.statsblob-load; exit $$status

## load-durable: make load's posters and batch runs with the collector's -data-dir (every
##               post fsynced to a write-ahead log before its 204), in a temporary directory
load-durable:
	cd export && $(GO) build -o $(CURDIR)/.statsblob-load ./cmd/statsblob-load
	dir=$$(mktemp -d); $$(command -v taskset >/dev/null && echo taskset -c 1) ./.statsblob-load -d $(LOADTIME) \
	  -server-cpus 0 -runs posters,batch -data-dir $$dir/data; status=$$?; rm -rf $$dir ./.statsblob-load; exit $$status

## load-accuracy: the collector's aggregates against one MergeAll of the same blobs, at 10^5
##                blobs per fleet (make test runs 2,000)
load-accuracy:
	cd export && $(GO) test -count=1 -run TestAccuracyWhateverTheOrder -v ./aggregate -aggregate.n=100000 -timeout 30m

## e2e-nats: the fleet through NATS JetStream (the nested module export/natsjs): its tests, then
##           a real 3-node JetStream cluster (nats-server built from its Go module), three
##           collectors and 24 shippers, a node and a collector killed with SIGKILL and
##           restarted; the exported totals must equal what the shippers recorded
NATS_BIN ?= $(CURDIR)/export/natsjs/bin
e2e-nats:
	cd export/natsjs && $(GO) build -o $(NATS_BIN)/nats-server github.com/nats-io/nats-server/v2
	cd export/natsjs && $(GO) build -o $(NATS_BIN)/statsblob-collector ./cmd/statsblob-collector
	cd export/natsjs && $(GO) vet ./... && $(GO) test -short -race -count=1 ./...
	cd export/natsjs && STATSBLOB_E2E_NATS=1 NATS_SERVER=$(NATS_BIN)/nats-server COLLECTOR=$(NATS_BIN)/statsblob-collector \
	  $(GO) test -count=1 -timeout 10m -run TestE2ENATS -v ./e2e

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
##           and HDR at equal bytes on the six target streams over seeds 1 to 4 (bench/peers'
##           tdmodes, whose TestAccurateTarget asserts issue 20's target 2 at 10^5 samples, 20
##           and 50 slots),
##           merged fleets beside caio's and influx's merges (tdmodes -fleets), and the accurate
##           mode beside caio and influx at equal centroids (tdmodes -centroids);
##           make accuracy LONG=1 adds 10^7 samples
accuracy:
	STATSBLOB_LONG=1 $(GO) test -count=1 ./tdigest ./blob
	cd bench/peers && $(GO) test -count=1 -run 'TestAccurateTarget$$|TestTDigestEqualCentroids$$' .
	$(GO) run ./bench/cmd/accuracy $(if $(LONG),-long)
	cd bench/peers && $(GO) run ./cmd/tdmodes -seeds 4 $(if $(LONG),-long)
	cd bench/peers && $(GO) run ./cmd/tdmodes -fleets -seeds 8
	cd bench/peers && $(GO) run ./cmd/tdmodes -centroids -seeds 1
	cd bench/peers && $(GO) run ./cmd/tdmodes -mean -seeds 100 -sizes 1000
	cd bench/peers && $(GO) run ./cmd/tdmodes -mean -seeds 20 -sizes 100000
	cd bench/peers && $(GO) run ./cmd/tdmodes -centroids -mean -seeds 100 -sizes 1000

demo:
	$(GO) run ./cmd/statsblob demo

fmt:
	gofmt -w $$(git ls-files '*.go')

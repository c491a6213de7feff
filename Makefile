# statsblob — common tasks. `make test` is what CI runs.
GO        ?= go
FUZZTIME  ?= 30s
BENCHTIME ?= 1s

.PHONY: test vet conformance fuzz bench accuracy demo fmt

## test: vet and run every test with the race detector (CI runs this)
test: vet
	$(GO) test -race ./...

vet:
	$(GO) vet ./...

## conformance: run the C reference scenarios and compare byte for byte
conformance:
	$(GO) test -run TestConformance -v ./internal/scenario

## fuzz: run every fuzz target for FUZZTIME each (make fuzz FUZZTIME=10m)
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$t"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

## bench: run the benchmarks (make bench BENCHTIME=3s)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...

## accuracy: t-digest rank errors against exact quantiles, beside caio/go-tdigest
accuracy:
	STATSBLOB_ACCURACY=1 $(GO) test -run TestAccuracyReport -v ./tdigest/caiotd

demo:
	$(GO) run ./cmd/statsblob demo

fmt:
	gofmt -w $$(git ls-files '*.go')

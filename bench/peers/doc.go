// Package peers compares statsblob with the Go libraries a service would
// otherwise pick for distributions: github.com/caio/go-tdigest/v4,
// github.com/DataDog/sketches-go (DDSketch),
// github.com/HdrHistogram/hdrhistogram-go, github.com/prometheus/client_golang
// (classic and native histograms) and github.com/VictoriaMetrics/metrics.
// It is a module of its own so that statsblob's go.mod does not carry the
// peers' dependencies.
//
// Every library sees the same value streams (Dists): the uniform and
// logish rings of package bench and a lognormal ring generated here, from
// the same xorshift64 generator. Three things are measured:
//
//   - update cost: ns/op and allocs/op of adding one value, from one
//     goroutine and from GOMAXPROCS goroutines (BenchmarkPeers/<peer>/update-*);
//   - serialization: ns/op, allocs/op and size of the wire form of a
//     structure that holds one ring of lognormal values
//     (BenchmarkPeers/<peer>/serialize);
//   - accuracy of the quantile estimators (digests and sketches), as rank
//     error in parts per million against exact quantiles from sorting, with
//     each peer tuned to about the statsblob digest's serialized size
//     (Accuracy; TestPeersAccuracyReport with STATSBLOB_ACCURACY=1).
//
// `go run ./cmd/peers` prints both tables in Markdown for bench/README.md.
package peers

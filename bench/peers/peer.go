package peers

import (
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/statsblob/statsblob/bench"
)

// Op names. Every peer has the update and serialize operations; Parallel is
// present when the peer offers a concurrent form or is wrapped in a mutex
// (Peer.Locked); Snapshot and ShardedSnapshot are statsblob's.
const (
	OpUpdate          = "update-"          // + Dist.Name: one goroutine
	OpParallel        = "update-parallel"  // GOMAXPROCS goroutines, lognormal ring
	OpSerialize       = "serialize"        // wire form of one lognormal ring
	OpSnapshot        = "snapshot"         // blob.Blob.Snapshot(false)
	OpShardedSnapshot = "snapshot-sharded" // blob.Sharded.Snapshot(false)
)

// MetricBytes is the benchmark metric carrying the serialized size.
const MetricBytes = "bytes"

// MetricLost is the benchmark metric of statsblob's t-digest updates that
// returned an error (samples the C's digest rejects), in parts per million.
const MetricLost = "lost-ppm"

// Peer is one library under comparison.
type Peer struct {
	Name   string // BenchmarkPeers/<Name>/<op>
	Config string // the configuration the benchmarks use, for the tables
	// Locked marks a peer whose parallel benchmark wraps a type that is not
	// safe for concurrent use in a sync.Mutex.
	Locked bool
	Ops    []Op
}

// Op is one benchmark of a peer.
type Op struct {
	Name  string
	Bench func(b *testing.B)
}

// Peers returns the peers in table order.
func Peers() []Peer {
	return []Peer{
		statsblobTDigestPeer(),
		caioPeer(),
		ddsketchPeer(),
		hdrPeer(),
		statsblobHistPeer(),
		promClassicPeer(),
		promNativePeer(),
		vmPeer(),
	}
}

// ringMask selects a ring value: operation i uses ring[i&ringMask].
const ringMask = bench.RingSize - 1

// ops returns the operations every peer has: update on each Dist, update
// from GOMAXPROCS goroutines and serialize, both on the lognormal ring
// (parallel may be nil).
func ops(update, parallel, serialize func(*testing.B, []uint64)) []Op {
	var o []Op
	for _, d := range Dists() {
		o = append(o, Op{OpUpdate + d.Name, func(b *testing.B) { update(b, d.Ring()) }})
	}
	if parallel != nil {
		o = append(o, Op{OpParallel, func(b *testing.B) { parallel(b, LognormalRing()) }})
	}
	return append(o, Op{OpSerialize, func(b *testing.B) { serialize(b, LognormalRing()) }})
}

// start resets the timer and turns on allocation reporting: the structure
// has seen the ring once already, so the loop measures the steady state,
// not the growth of a new structure.
func start(b *testing.B) {
	b.ReportAllocs()
	b.ResetTimer()
}

// parallel runs add over the ring from GOMAXPROCS goroutines, each
// starting at its own place in the ring.
func parallel(b *testing.B, ring []uint64, add func(v uint64)) {
	var next atomic.Uint64
	start(b)
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(bench.RingSize / 8))
		for pb.Next() {
			add(ring[i&ringMask])
			i++
		}
	})
}

// shards is the shard count of blob.Sharded (its documentation's advice).
func shards() int { return 2 * runtime.GOMAXPROCS(0) }

package peers_test

import (
	"testing"

	"github.com/statsblob/statsblob/bench/peers"
)

// BenchmarkPeers runs every peer's operations: BenchmarkPeers/<peer>/<op>
// with op update-uniform, update-logish, update-lognormal,
// update-parallel, serialize (with a "bytes" metric) and, for statsblob,
// snapshot and snapshot-sharded.
func BenchmarkPeers(b *testing.B) {
	for _, p := range peers.Peers() {
		b.Run(p.Name, func(b *testing.B) {
			for _, op := range p.Ops {
				b.Run(op.Name, op.Bench)
			}
		})
	}
}

// BenchmarkCollector runs the peers' collector operations:
// BenchmarkCollector/<peer>/decode and .../decode+merge, one sketch of a
// fleet connection's RTT samples per op (compare bench's
// BenchmarkCollector/frombytes/tcp and e2e/tcp).
func BenchmarkCollector(b *testing.B) {
	for _, p := range peers.CollectorPeers() {
		b.Run(p.Name, func(b *testing.B) {
			for _, op := range p.Ops {
				b.Run(op.Name, op.Bench)
			}
		})
	}
}

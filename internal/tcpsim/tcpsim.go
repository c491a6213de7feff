// Package tcpsim simulates TCP connections updating TCP_DEFAULT blobs
// (internal/tcpstats) from the conformance value stream: the workload of
// the demo, the collector benchmarks and the export tests.
package tcpsim

import (
	"math"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/internal/stream"
	"github.com/statsblob/statsblob/internal/tcpstats"
)

// SimulateConn feeds one simulated TCP connection's updates into b, a
// TCP_DEFAULT blob, drawing from s, and appends the connection's RTT
// samples to rtts. It is the demo's workload: 20..419 packets, each adding
// its size, a window, an RTT around the connection's lognormal base RTT and
// a segments-per-ACK value, with a retransmit and congestion signal one
// time in 50 and goodput figures every tenth packet.
func SimulateConn(b *blob.Blob, s *stream.Stream, rtts []float64) []float64 {
	pkts := 20 + int(s.Next()%400)
	base := s.Lognormal(math.Log(30000), 0.8) // µs
	var wnd uint64 = 65535
	for i := 0; i < pkts; i++ {
		sz := uint64(200 + s.Next()%1249)
		_ = b.UpdateU64(tcpstats.TxPB, sz)
		if s.Next()%50 == 0 {
			_ = b.UpdateU32(tcpstats.RetxPB, uint32(sz))
			_ = b.UpdateU32(tcpstats.CSig, uint32(1)<<(s.Next()%4))
		}
		wnd = wnd*7/8 + s.Next()%32768
		_ = b.UpdateULong(tcpstats.FrWin, wnd)
		_ = b.UpdateULong(tcpstats.LcWin, wnd/2)
		rtt := uint32(base * s.Lognormal(0, 0.3))
		_ = b.UpdateU32(tcpstats.RTT, rtt)
		rtts = append(rtts, float64(rtt))
		if i%10 == 9 {
			gput := uint32(s.Lognormal(math.Log(5000), 1)) // kbit/s: a TDGSTCLUST32 of precision 4 holds values below 2^24
			_ = b.UpdateU32(tcpstats.GPut, gput)
			_ = b.UpdateS32(tcpstats.CalcFrWinDiff, int32(s.Next()%2000)-1000)
			_ = b.UpdateS32(tcpstats.GPutND, int32(s.Next()%200)-100)
		}
		_ = b.UpdateU32(tcpstats.AckLen, uint32(s.Next()%14))
	}
	return rtts
}

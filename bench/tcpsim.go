package bench

import (
	"math"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/internal/tcpstats"
	"github.com/statsblob/statsblob/tpl"
)

// Unit advances the stream and returns a uniform float in (0, 1).
func (s *Stream) Unit() float64 { return (float64(s.Next()>>11) + 0.5) / (1 << 53) }

// Lognormal advances the stream twice and returns exp(mu + sigma·N(0,1))
// (Box–Muller, the cosine half).
func (s *Stream) Lognormal(mu, sigma float64) float64 {
	n := math.Sqrt(-2*math.Log(s.Unit())) * math.Cos(2*math.Pi*s.Unit())
	return math.Exp(mu + sigma*n)
}

// SimulateTCPConn feeds one simulated TCP connection's updates into b, a
// TCP_DEFAULT blob, drawing from s, and appends the connection's RTT
// samples to rtts. It is the demo's workload: 20..419 packets, each adding
// its size, a window, an RTT around the connection's lognormal base RTT and
// a segments-per-ACK value, with a retransmit and congestion signal one
// time in 50 and goodput figures every tenth packet.
func SimulateTCPConn(b *blob.Blob, s *Stream, rtts []float64) []float64 {
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

// Fleet is a collector's input: the blobs of n simulated TCP connections.
type Fleet struct {
	Registry *tpl.Registry // holds TCP_DEFAULT, for renderings with names
	Wire     [][]byte      // each connection's blob bytes, as shipped
	RTTs     [][]float64   // each connection's RTT samples, for the peers
}

// TCPFleet simulates n connections (SimulateTCPConn, the stream starting
// at seed) with a fixed clock that ends them 1/16 s apart, as the demo
// does, and returns their blobs' bytes.
func TCPFleet(n int, seed uint64) (*Fleet, error) {
	reg := tpl.NewRegistry()
	t, err := tcpstats.New(reg)
	if err != nil {
		return nil, err
	}
	f := &Fleet{Registry: reg}
	s := Stream(seed)
	clock := blob.SBinTime(1000, 0)
	env := &blob.Env{Rand: bsdrand.New(uint32(seed)), Clock: func() int64 { return clock }}
	for range n {
		b := blob.New(t, env)
		rtts := SimulateTCPConn(b, &s, nil)
		clock += 1 << 28
		f.Wire = append(f.Wire, append([]byte(nil), b.Bytes()...))
		f.RTTs = append(f.RTTs, rtts)
	}
	return f, nil
}

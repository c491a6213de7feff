package bench

import (
	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/internal/tcpsim"
	"github.com/statsblob/statsblob/internal/tcpstats"
	"github.com/statsblob/statsblob/tpl"
)

// Fleet is a collector's input: the blobs of n simulated TCP connections.
type Fleet struct {
	Registry *tpl.Registry // holds TCP_DEFAULT, for renderings with names
	Wire     [][]byte      // each connection's blob bytes, as shipped
	RTTs     [][]float64   // each connection's RTT samples, for the peers
}

// TCPFleet simulates n connections (tcpsim.SimulateConn, the stream
// starting at seed) with a fixed clock that ends them 1/16 s apart, as the
// demo does, and returns their blobs' bytes.
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
		rtts := tcpsim.SimulateConn(b, &s, nil)
		clock += 1 << 28
		f.Wire = append(f.Wire, append([]byte(nil), b.Bytes()...))
		f.RTTs = append(f.RTTs, rtts)
	}
	return f, nil
}

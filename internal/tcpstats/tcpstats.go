// Package tcpstats declares the TCP_DEFAULT template of FreeBSD's
// sys/netinet/tcp_stats.c: the VOIs a TCP connection reports (VOI ids from
// netinet/tcp.h, congestion signal values from netinet/cc/cc.h) and the
// statistics kept for each. The demo and the benchmarks use it.
package tcpstats

import (
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// The TCP_DEFAULT VOI ids.
const (
	TxPB          = 0 // bytes transmitted (SUM)
	RetxPB        = 1 // bytes retransmitted (SUM)
	FrWin         = 2 // receiver's window (MAX)
	LcWin         = 3 // congestion window (MAX)
	RTT           = 4 // round-trip time, µs (MAX, MIN, TDGSTCLUST32(20,4))
	CSig          = 5 // congestion signals (DVHIST32 of 1, 2, 4, 8)
	GPut          = 6 // goodput (MAX, TDGSTCLUST32(20,4))
	CalcFrWinDiff = 7 // computed minus advertised window (CRHIST32 with one bucket from 0, lbinf)
	GPutND        = 8 // normalised goodput difference (TDGSTCLUST32(10,4))
	AckLen        = 9 // segments per ACK (MAX, CRHIST32_LIN(0,9,1) with ubinf)
)

// Name is the template's name.
const Name = "TCP_DEFAULT"

// Defs returns the template's VOI definitions in the order tcp_stats.c
// adds them.
func Defs() []tpl.VOIDef {
	usr := func(dt voi.DType, fl hist.Flags, vals ...uint64) tpl.StatSpec {
		s := hist.Spec{DType: dt, Scheme: hist.Usr, Flags: fl}
		for _, v := range vals {
			s.Buckets = append(s.Buckets, hist.Bound{LB: v, UB: v})
		}
		return tpl.Histogram(s)
	}
	return []tpl.VOIDef{
		{ID: TxPB, Name: "TCP_TXPB", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}},
		{ID: RetxPB, Name: "TCP_RETXPB", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum()}},
		{ID: FrWin, Name: "TCP_FRWIN", DType: voi.IntULong, Stats: []tpl.StatSpec{tpl.Max()}},
		{ID: LcWin, Name: "TCP_LCWIN", DType: voi.IntULong, Stats: []tpl.StatSpec{tpl.Max()}},
		{ID: RTT, Name: "TCP_RTT", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Max(), tpl.Min(), tpl.TDigest(voi.TDgstClust32, 20, 4)}},
		{ID: CSig, Name: "TCP_CSIG", DType: voi.IntU32, Stats: []tpl.StatSpec{usr(voi.DVHist32, 0, 1, 2, 4, 8)}},
		{ID: GPut, Name: "TCP_GPUT", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Max(), tpl.TDigest(voi.TDgstClust32, 20, 4)}},
		{ID: CalcFrWinDiff, Name: "TCP_CALCFRWINDIFF", DType: voi.IntS32, Stats: []tpl.StatSpec{usr(voi.CRHist32, hist.LBoundInf, 0)}},
		{ID: GPutND, Name: "TCP_GPUT_ND", DType: voi.IntS32, Stats: []tpl.StatSpec{tpl.TDigest(voi.TDgstClust32, 10, 4)}},
		{ID: AckLen, Name: "TCP_ACKLEN", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Max(), tpl.Histogram(hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: 0, UB: 9, StepInc: 1, Flags: hist.UBoundInf})}},
	}
}

// New registers TCP_DEFAULT in reg and returns it.
func New(reg *tpl.Registry) (*tpl.Template, error) {
	t, err := reg.New(Name)
	if err != nil {
		return nil, err
	}
	for _, d := range Defs() {
		if err := t.AddVOI(d); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Package bench holds the benchmark workloads of statsblob: rings of the
// conformance value stream (internal/stream), the Go twins of the C reference's
// benchmark cases (FORMAT.md section 14), and the side-by-side comparison
// with the C (go run ./bench/cmd/compare). Peer libraries are compared in
// the separate module bench/peers, so the library's own dependencies stay
// lean.
package bench

import (
	"testing"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/stream"
	"github.com/statsblob/statsblob/internal/tcpstats"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tostr"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// RingSize is the number of values in each benchmark ring; operation i
// uses value i & (RingSize-1).
const RingSize = 1 << 16

// StreamSeed is where the value stream starts for the rings.
const StreamSeed = stream.Seed

// Stream is the value stream of the conformance scenarios (package
// internal/stream, FORMAT.md section 9).
type Stream = stream.Stream

// ring fills a ring from the stream. Rings are arrays, so that indexing
// one with i&(RingSize-1) needs no bounds check, as indexing the C's static
// arrays needs none.
func ring(dist stream.Dist) *[RingSize]uint64 {
	return (*[RingSize]uint64)(stream.Ring(StreamSeed, RingSize, dist))
}

// The rings are filled when the package loads, as the C fills its static
// rings before any case: a lazily made ring costs a synchronised check per
// operation that the C does not pay (about 2 ns of tcp_default's op).
var uniformRing, logishRing = ring(stream.Uniform), ring(stream.Logish)

// UniformRing returns the ring of stream.Uniform values (shared; read-only).
func UniformRing() []uint64 { return uniformRing[:] }

// LogishRing returns the ring of stream.Logish values (shared; read-only).
func LogishRing() []uint64 { return logishRing[:] }

// Case is one benchmark case of the C reference, or a Go case timed
// against one (C names it).
type Case struct {
	Name  string
	Bench func(b *testing.B)
	C     string // the C case it is compared with, when not Name
}

// CName is the name of the C case c is compared with.
func (c Case) CName() string {
	if c.C != "" {
		return c.C
	}
	return c.Name
}

// Cases returns the C reference's benchmark cases in FORMAT.md's order,
// with snapshot_into (SnapshotInto a caller's buffer, timed against the
// C's snapshot: malloc, copy, free) after snapshot.
func Cases() []Case {
	return []Case{
		{"sum", updateCase(voi.IntU64, tpl.Sum()), ""},
		{"summaxmin", updateCase(voi.IntU64, tpl.Sum(), tpl.Max(), tpl.Min()), ""},
		{"crhist64_lin100", updateCase(voi.IntU64, tpl.Histogram(hist.Spec{DType: voi.CRHist64, Scheme: hist.Lin, LB: 0, UB: 990, StepInc: 10})), ""},
		{"dvhist64", dvhistCase, ""},
		{"tdgst64_50", tdgstCase, ""},
		{"tdgst64_50_accurate", tdgstAccurateCase, "tdgst64_50"},
		{"tcp_default", tcpDefaultCase, ""},
		{"snapshot", snapshotCase, ""},
		{"snapshot_into", snapshotIntoCase, "snapshot"},
		{"clone_prealloc", clonePreallocCase, ""},
		{"tostr_json", tostrCase(tostr.JSON), ""},
		{"tostr_freeform", tostrCase(tostr.FreeForm), ""},
	}
}

// env is the benchmarks' environment: a fixed clock and random() seeded
// with 1, as the C harness seeds it before each update loop.
func env() *blob.Env {
	return &blob.Env{Rand: bsdrand.New(1), Clock: func() int64 { return blob.SBinTime(1000, 0) }}
}

// single returns a blob of a one-VOI template (VOI 0 "v").
func single(b *testing.B, name string, dt voi.DType, stats ...tpl.StatSpec) *blob.Blob {
	b.Helper()
	t, err := tpl.NewRegistry().New(name)
	if err != nil {
		b.Fatal(err)
	}
	if err := t.AddVOI(tpl.VOIDef{ID: 0, Name: "v", DType: dt, Stats: stats}); err != nil {
		b.Fatal(err)
	}
	return blob.New(t, env())
}

func updateCase(dt voi.DType, stats ...tpl.StatSpec) func(*testing.B) {
	return func(b *testing.B) {
		ring := uniformRing
		bl := single(b, "bench", dt, stats...)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			_ = bl.UpdateU64(0, ring[i&(RingSize-1)])
		}
	}
}

func dvhistCase(b *testing.B) {
	vals := make([]hist.Bound, 16)
	for i := range vals {
		vals[i] = hist.Bound{LB: uint64(i), UB: uint64(i)}
	}
	ring := uniformRing
	bl := single(b, "dvhist64", voi.IntU64, tpl.Histogram(hist.Spec{DType: voi.DVHist64, Scheme: hist.Usr, Buckets: vals}))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = bl.UpdateU64(0, ring[i&(RingSize-1)]%20)
	}
}

func tdgstCase(b *testing.B) {
	ring := logishRing
	bl := single(b, "tdgst64_50", voi.IntU64, tpl.TDigest(voi.TDgstClust64, 50, 4))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = bl.UpdateU64(0, ring[i&(RingSize-1)])
	}
}

// tdgstAccurateCase is tdgst64_50 with the t-digest in the accurate mode
// (tdigest.Accurate), timed against the C's clustering: its updates
// buffer samples and, every 32 samples per slot, merge them.
func tdgstAccurateCase(b *testing.B) {
	ring := logishRing
	bl := single(b, "tdgst64_50", voi.IntU64, tpl.TDigestOf(tpl.TDigestSpec{DType: voi.TDgstClust64, NCtds: 50, Prec: 4, Mode: tdigest.Accurate}))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = bl.UpdateU64(0, ring[i&(RingSize-1)])
	}
}

// TCPDefaultOp is operation i of the tcp_default case: VOI i mod 10
// updated with the uniform ring's value truncated to the VOI's type,
// through the typed method of that type.
func TCPDefaultOp(bl *blob.Blob, i int) error {
	v := uniformRing[i&(RingSize-1)]
	switch k := int32(i % 10); k {
	case tcpstats.TxPB:
		return bl.UpdateU64(k, v)
	case tcpstats.FrWin, tcpstats.LcWin:
		return bl.UpdateULong(k, v)
	case tcpstats.CalcFrWinDiff, tcpstats.GPutND:
		return bl.UpdateS32(k, int32(v))
	default:
		return bl.UpdateU32(k, uint32(v))
	}
}

// NewTCPDefault returns a TCP_DEFAULT blob with the benchmarks' Env (fixed
// clock, random() seeded with 1).
func NewTCPDefault() (*blob.Blob, error) {
	t, err := tcpstats.New(tpl.NewRegistry())
	if err != nil {
		return nil, err
	}
	return blob.New(t, env()), nil
}

func tcpDefaultCase(b *testing.B) {
	bl, err := NewTCPDefault()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = TCPDefaultOp(bl, i)
	}
}

// warm returns a TCP_DEFAULT blob after operations 0..9999 of
// tcp_default, and its template's registry.
func warm(b *testing.B) (*blob.Blob, *tpl.Registry) {
	b.Helper()
	reg := tpl.NewRegistry()
	t, err := tcpstats.New(reg)
	if err != nil {
		b.Fatal(err)
	}
	bl := blob.New(t, env())
	for i := 0; i < 10000; i++ {
		if err := TCPDefaultOp(bl, i); err != nil {
			b.Fatal(err)
		}
	}
	return bl, reg
}

func snapshotCase(b *testing.B) {
	bl, _ := warm(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = bl.Snapshot(false)
	}
}

func snapshotIntoCase(b *testing.B) {
	bl, _ := warm(b)
	dst := make([]byte, bl.CurSz())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = bl.SnapshotInto(dst, len(dst), false)
	}
}

func clonePreallocCase(b *testing.B) {
	bl, _ := warm(b)
	dst := make([]byte, bl.CurSz())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = bl.CloneInto(dst, len(dst))
	}
}

func tostrCase(f tostr.Format) func(*testing.B) {
	return func(b *testing.B) {
		bl, reg := warm(b)
		o := tostr.Options{Format: f, Flags: tostr.Meta, Registry: reg}
		buf, err := tostr.Append(nil, bl, o)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			buf, _ = tostr.Append(buf[:0], bl, o)
		}
		b.ReportMetric(float64(len(buf)), "out_bytes")
	}
}

package peers

import (
	"bytes"
	"testing"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/DataDog/sketches-go/ddsketch/pb/sketchpb"
	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"google.golang.org/protobuf/proto"

	"github.com/statsblob/statsblob/bench"
)

// Collector operations: the peers' side of bench.BenchmarkCollector. Each
// decodes one connection's sketch of its RTT samples (the same fleet as
// the statsblob benchmark: bench.TCPFleet(bench.CollectorConns,
// bench.CollectorSeed)) and merges it into an aggregate, one sketch per
// op, reporting MB/s over the wire bytes and cpu-ns/op, the process's CPU
// time per op.
const (
	OpDecode      = "decode"       // wire bytes to a sketch
	OpDecodeMerge = "decode+merge" // and merged into an aggregate
)

// fleetRTTs returns the RTT samples of the collector fleet's connections,
// as integers (µs).
func fleetRTTs() [][]uint64 {
	f, err := bench.TCPFleet(bench.CollectorConns, bench.CollectorSeed)
	if err != nil {
		panic(err) // TCP_DEFAULT is valid
	}
	out := make([][]uint64, len(f.RTTs))
	for i, r := range f.RTTs {
		out[i] = make([]uint64, len(r))
		for j, v := range r {
			out[i][j] = uint64(v)
		}
	}
	return out
}

// CollectorPeer is one peer's collector benchmarks.
type CollectorPeer struct {
	Name   string
	Config string
	Ops    []Op
}

// CollectorPeers returns the decode and decode+merge benchmarks of
// DDSketch (protobuf), HDR (V2 compressed, base64) and caio (its byte
// form), each sketch holding one fleet connection's RTT samples.
func CollectorPeers() []CollectorPeer {
	rtts := fleetRTTs()
	return []CollectorPeer{
		collectorPeer("ddsketch", "NewDefaultDDSketch(0.01); protobuf, proto.Unmarshal + FromProto + MergeWith", rtts,
			func(vals []uint64) []byte {
				s := newDDSketch(DDSketchAccuracy)
				fillDDSketch(s, vals)
				var buf bytes.Buffer
				encodeDDSketch(&buf, s)
				return buf.Bytes()
			},
			func() func([]byte, bool) error {
				agg := newDDSketch(DDSketchAccuracy)
				var pb sketchpb.DDSketch
				return func(p []byte, merge bool) error {
					if err := proto.Unmarshal(p, &pb); err != nil {
						return err
					}
					s, err := ddsketch.FromProto(&pb)
					if err != nil || !merge {
						return err
					}
					return agg.MergeWith(s)
				}
			}),
		collectorPeer("hdr", "New(1, 2^22, 2); V2 compressed, base64, Decode + Merge", rtts,
			func(vals []uint64) []byte {
				h := newHDR(HDRSigFigs)
				fillHDR(h, vals)
				return encodeHDR(h)
			},
			func() func([]byte, bool) error {
				agg := newHDR(HDRSigFigs)
				return func(p []byte, merge bool) error {
					h, err := hdrhistogram.Decode(p)
					if err != nil || !merge {
						return err
					}
					agg.Merge(h)
					return nil
				}
			}),
		collectorPeer("caio", "Compression(100); ToBytes, FromBytes into a reused digest + Merge", rtts,
			func(vals []uint64) []byte {
				td := newCaio(CaioCompression)
				fillCaio(td, vals)
				return td.ToBytes(nil)
			},
			func() func([]byte, bool) error {
				agg, td := newCaio(CaioCompression), newCaio(CaioCompression)
				return func(p []byte, merge bool) error {
					if err := td.FromBytes(p); err != nil || !merge {
						return err
					}
					return agg.Merge(td)
				}
			}),
	}
}

// collectorPeer encodes each connection's samples with encode and
// benchmarks decoding them (and merging them) with what newDecoder returns.
func collectorPeer(name, config string, rtts [][]uint64, encode func([]uint64) []byte, newDecoder func() func(p []byte, merge bool) error) CollectorPeer {
	wire := make([][]byte, len(rtts))
	total := 0
	for i, r := range rtts {
		wire[i] = encode(r)
		total += len(wire[i])
	}
	run := func(merge bool) func(*testing.B) {
		return func(b *testing.B) {
			dec := newDecoder()
			b.SetBytes(int64(total / len(wire)))
			b.ReportAllocs()
			t0 := processCPU()
			for i := 0; b.Loop(); i++ {
				if err := dec(wire[i%len(wire)], merge); err != nil {
					b.Fatal(err)
				}
			}
			if t0 > 0 {
				b.ReportMetric(float64(processCPU()-t0)/float64(b.N), "cpu-ns/op")
			}
			b.ReportMetric(float64(total)/float64(len(wire)), MetricBytes)
		}
	}
	return CollectorPeer{Name: name, Config: config, Ops: []Op{{OpDecode, run(false)}, {OpDecodeMerge, run(true)}}}
}

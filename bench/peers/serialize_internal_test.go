package peers

import (
	"bytes"
	"strings"
	"testing"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/DataDog/sketches-go/ddsketch/pb/sketchpb"
	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	caio "github.com/caio/go-tdigest/v4"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// TestSerializedFormsAreComplete decodes what each serialize benchmark
// measures and finds every value of the ring in it: the bytes column counts
// a complete wire form, not a fragment.
func TestSerializedFormsAreComplete(t *testing.T) {
	ring := LognormalRing()
	want := uint64(len(ring))

	t.Run("statsblob-tdigest", func(t *testing.T) {
		bl := newBlob(tdigestTemplate())
		lost := fillBlob(bl, ring)
		p, _ := bl.AppendBinary(nil)
		got, err := blob.FromBytes(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := got.Fetch(0, voi.TDgst)
		if n, err := tdigest.Count(st.Data, voi.TDgstClust64); err != nil || n != want-uint64(lost) {
			t.Fatalf("count %d (%v), want %d - %d lost", n, err, want, lost)
		}
	})
	t.Run("statsblob-hist", func(t *testing.T) {
		bl := newBlob(histTemplate())
		if lost := fillBlob(bl, ring); lost != 0 {
			t.Fatalf("%d updates failed", lost)
		}
		p, _ := bl.AppendBinary(nil)
		if _, err := blob.FromBytes(p, nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("caio", func(t *testing.T) {
		td := newCaio(CaioCompression)
		fillCaio(td, ring)
		got, err := caio.FromBytes(bytes.NewReader(td.ToBytes(nil)))
		if err != nil || got.Count() != want {
			t.Fatalf("count %d (%v), want %d", got.Count(), err, want)
		}
	})
	t.Run("ddsketch", func(t *testing.T) {
		s := newDDSketch(DDSketchAccuracy)
		fillDDSketch(s, ring)
		var buf bytes.Buffer
		encodeDDSketch(&buf, s)
		var pb sketchpb.DDSketch
		if err := proto.Unmarshal(buf.Bytes(), &pb); err != nil {
			t.Fatal(err)
		}
		got, err := ddsketch.FromProto(&pb)
		if err != nil || got.GetCount() != float64(want) {
			t.Fatalf("count %v (%v), want %d", got.GetCount(), err, want)
		}
	})
	t.Run("hdr", func(t *testing.T) {
		h := newHDR(HDRSigFigs)
		fillHDR(h, ring)
		got, err := hdrhistogram.Decode(encodeHDR(h))
		if err != nil || got.TotalCount() != int64(want) {
			t.Fatalf("count %d (%v), want %d", got.TotalCount(), err, want)
		}
	})
	for name, newHist := range map[string]func() prometheus.Histogram{
		"prom-classic": newPromClassic,
		"prom-native":  newPromNative,
	} {
		t.Run(name, func(t *testing.T) {
			h := newHist()
			for _, v := range ring {
				h.Observe(float64(v))
			}
			var m dto.Metric
			if err := h.Write(&m); err != nil {
				t.Fatal(err)
			}
			p, err := proto.Marshal(&m)
			if err != nil {
				t.Fatal(err)
			}
			var got dto.Metric
			if err := proto.Unmarshal(p, &got); err != nil || got.GetHistogram().GetSampleCount() != want {
				t.Fatalf("count %d (%v), want %d", got.GetHistogram().GetSampleCount(), err, want)
			}
		})
	}
	t.Run("victoriametrics", func(t *testing.T) {
		s, h := newVM()
		fillVM(h, ring)
		var buf bytes.Buffer
		s.WritePrometheus(&buf)
		if !strings.Contains(buf.String(), "\nv_count 65536\n") {
			t.Fatalf("no v_count 65536 in\n%s", buf.String())
		}
	})
}

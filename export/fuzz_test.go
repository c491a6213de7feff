package export_test

import (
	"math"
	"testing"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/internal/fixture"
)

// FuzzAppend maps any blob blob.FromBytes accepts, with and without its
// template: no panic, and every metric keeps the exporters' invariants
// (histogram bounds strictly ascending, counts adding up, summary quantiles
// ascending in q, exponential buckets adding up to the count).
func FuzzAppend(f *testing.F) {
	tp := fixture.Kitchen()
	f.Add(fixture.KitchenBlob(tp).Bytes())
	f.Add(blob.New(tp, nil).Bytes())
	// A signed digest whose means lie at or above zero while MIN is below
	// it: its exponential histogram once dropped the negative mass (see
	// TestNativeHistogramHoldsEverySample). Mapped without its template.
	signed, _ := signedDigestBlob(f)
	f.Add(signed.Bytes())
	m, err := export.NewMapper(export.Options{NativeHistogram: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		b, err := blob.FromBytes(p, nil)
		if err != nil {
			return
		}
		for _, n := range []export.Named{{Blob: b}, {Blob: b, Template: tp}} {
			ms, err := m.Append(nil, n)
			if err != nil {
				continue
			}
			for _, mt := range ms {
				check(t, mt)
			}
		}
	})
}

func check(t *testing.T, mt export.Metric) {
	t.Helper()
	if mt.Name == "" || mt.Kind < export.KindCounter || mt.Kind > export.KindExpHistogram {
		t.Fatalf("metric %+v", mt)
	}
	if h := mt.Histogram; h != nil {
		if len(h.Counts) != len(h.Bounds)+1 {
			t.Fatalf("%s: %d counts for %d bounds", mt.Name, len(h.Counts), len(h.Bounds))
		}
		var n uint64
		for i, c := range h.Counts {
			if i > 0 && i < len(h.Bounds) && !(h.Bounds[i-1] < h.Bounds[i]) {
				t.Fatalf("%s: bounds %v not ascending", mt.Name, h.Bounds)
			}
			if n+c >= n {
				n += c
			} else {
				n = math.MaxUint64
			}
		}
		if n != h.Count {
			t.Fatalf("%s: counts add up to %d, count %d", mt.Name, n, h.Count)
		}
	}
	if s := mt.Summary; s != nil {
		for i := 1; i < len(s.Quantiles); i++ {
			if !(s.Quantiles[i-1].Q < s.Quantiles[i].Q) {
				t.Fatalf("%s: quantiles %v", mt.Name, s.Quantiles)
			}
		}
	}
	if e := mt.Exp; e != nil {
		n := e.ZeroCount
		for _, c := range e.Positive.Counts {
			n += c
		}
		for _, c := range e.Negative.Counts {
			n += c
		}
		if n != e.Count {
			t.Fatalf("%s: exponential buckets add up to %d, count %d", mt.Name, n, e.Count)
		}
	}
}

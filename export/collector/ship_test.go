package collector_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/family"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/ship"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// dropFirst fails every third send before it leaves: a request the
// collector never sees, which the shipper retries.
type dropFirst struct {
	tr ship.Transport
	n  atomic.Int64
}

func (d *dropFirst) Send(ctx context.Context, m ship.Message) error {
	if d.n.Add(1)%3 == 0 {
		return errors.New("dropped before sending")
	}
	return d.tr.Send(ctx, m)
}

// TestShipperToCollector: a service's family, shipped by package ship to
// the collector through sends that fail before they leave and 503s the
// collector never merged, arrives exactly: per label set, the SUM and the
// histogram and t-digest counts are what was recorded. (Duplicates, which
// the collector does not yet recognise by Statsblob-Sender and
// Statsblob-Seq, are not injected here.)
func TestShipperToCollector(t *testing.T) {
	reg := tpl.NewRegistry()
	tp, err := reg.New("SVC")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "lat", DType: voi.IntU64, Stats: []tpl.StatSpec{
		tpl.Sum(),
		tpl.Histogram(hist.Spec{DType: voi.CRHist64, Scheme: hist.Lin, LB: 0, UB: 1000, StepInc: 100}),
		tpl.TDigest(voi.TDgstClust64, 50, 8)}}))
	s, err := collector.New(collector.Config{Templates: reg})
	require.NoError(t, err)
	var n503 atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/blobs" && n503.Add(1)%4 == 0 {
			http.Error(w, "busy", http.StatusServiceUnavailable) // before the collector sees it
			return
		}
		s.ServeHTTP(w, r)
	}))
	defer srv.Close()

	fam, err := family.New(tp, []string{"route"}, family.Options{})
	require.NoError(t, err)
	sh, err := ship.New(&dropFirst{tr: &ship.HTTP{URL: srv.URL + "/v1/blobs"}}, ship.Options{
		Interval: 2 * time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond,
		Labels: []ship.Label{{Name: "host", Value: "h1"}}})
	require.NoError(t, err)
	require.NoError(t, sh.AddFamily(fam))
	ran := make(chan error, 1)
	go func() { ran <- sh.Run(context.Background()) }()

	routes := []string{"a", "b"}
	want := map[string]*[3]uint64{} // route: sum, samples, samples under 1000
	var wg sync.WaitGroup
	var mu sync.Mutex
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3000 {
				x := uint64((i*37 + w*11) % 1300)
				r := routes[i%2]
				b, err := fam.With(r)
				if err == nil {
					err = b.UpdateU64(0, x)
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if want[r] == nil {
					want[r] = &[3]uint64{}
				}
				want[r][0] += x
				want[r][1]++
				if x < 1000 {
					want[r][2]++
				}
				mu.Unlock()
				if i%100 == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	// Close, not a cancelled context, stops Run: a send cut off would
	// have an unknown outcome, and its retry would count twice at a
	// collector that does not deduplicate.
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	require.NoError(t, sh.Close(cctx))
	require.NoError(t, <-ran)

	got := map[string]*[3]uint64{}
	for _, nb := range s.Blobs() {
		require.Len(t, nb.Labels, 2)
		require.Equal(t, "host", nb.Labels[0].Name)
		r := nb.Labels[1].Value
		sum, err := nb.Blob.FetchU64(0, voi.Sum)
		require.NoError(t, err)
		td, err := nb.Blob.Fetch(0, voi.TDgst)
		require.NoError(t, err)
		n, err := td.Count()
		require.NoError(t, err)
		h, err := nb.Blob.Fetch(0, voi.Hist)
		require.NoError(t, err)
		var under uint64
		for _, bk := range hist.Buckets(h.Data, h.DType, voi.IntU64) {
			if bk.LB < 1000 {
				under += bk.Cnt
			}
		}
		got[r] = &[3]uint64{sum, n, under}
	}
	require.Equal(t, want, got)
	st := sh.Stats()
	require.NotZero(t, st.Retried)
	require.NotZero(t, st.Refused)
	require.Zero(t, st.Dropped)
	require.Zero(t, st.Pending)
}

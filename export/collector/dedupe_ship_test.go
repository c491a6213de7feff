package collector_test

import (
	"context"
	"net/http/httptest"
	"sync"
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

// replaying sends every message twice, and every fifth send also replays
// a message sent long before (a proxy's duplicate and a stale copy).
type replaying struct {
	tr  ship.Transport
	mu  sync.Mutex
	old []ship.Message
	n   int
}

func (r *replaying) Send(ctx context.Context, m ship.Message) error {
	m.Body = append([]byte(nil), m.Body...)
	m.Labels = append([]ship.Label(nil), m.Labels...)
	r.mu.Lock()
	r.n++
	r.old = append(r.old, m)
	var stale *ship.Message
	if r.n%5 == 0 && len(r.old) > 10 {
		s := r.old[len(r.old)/3]
		stale = &s
	}
	r.mu.Unlock()
	if err := r.tr.Send(ctx, m); err != nil {
		return err
	}
	if stale != nil {
		_ = r.tr.Send(ctx, *stale)
	}
	return r.tr.Send(ctx, m)
}

// TestShipperDuplicatesCountOnce: a family shipped by package ship through
// a transport that sends every message twice and replays old ones arrives
// exactly once per recorded sample.
func TestShipperDuplicatesCountOnce(t *testing.T) {
	reg := tpl.NewRegistry()
	tp, err := reg.New("SVC")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "lat", DType: voi.IntU64, Stats: []tpl.StatSpec{
		tpl.Sum(), tpl.Histogram(hist.Spec{DType: voi.CRHist64, Scheme: hist.Lin, LB: 0, UB: 1000, StepInc: 100})}}))
	s, err := collector.New(collector.Config{Templates: reg})
	require.NoError(t, err)
	srv := httptest.NewServer(s)
	defer srv.Close()
	fam, err := family.New(tp, []string{"route"}, family.Options{})
	require.NoError(t, err)
	sh, err := ship.New(&replaying{tr: &ship.HTTP{URL: srv.URL + "/v1/blobs"}}, ship.Options{
		Interval: 2 * time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, sh.AddFamily(fam))
	ran := make(chan error, 1)
	go func() { ran <- sh.Run(context.Background()) }()
	want := map[string]uint64{}
	for i := range 3000 {
		r := []string{"a", "b", "c"}[i%3]
		b, err := fam.With(r)
		require.NoError(t, err)
		require.NoError(t, b.UpdateU64(0, uint64(i)))
		want[r] += uint64(i)
		if i%100 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, sh.Close(cctx))
	require.NoError(t, <-ran)
	got := map[string]uint64{}
	for _, nb := range s.Blobs() {
		v, err := nb.Blob.FetchU64(0, voi.Sum)
		require.NoError(t, err)
		got[nb.Labels[0].Value] = v
	}
	require.Equal(t, want, got)
	require.Positive(t, counterValue(t, s, "statsblob_collector_duplicates_total"))
}

func counterValue(t *testing.T, s *collector.Server, name string) float64 {
	t.Helper()
	mfs, err := s.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.Metric[0].Counter.GetValue()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}

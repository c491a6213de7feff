package ship_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/family"
	"github.com/statsblob/statsblob/ship"
)

// flaky is a Transport between the shipper and the receiver that, drawn
// from a seeded source, drops a message before it leaves, delivers it and
// loses the answer, delivers it twice, delays it, or keeps a copy that it
// delivers again later, out of order.
type flaky struct {
	tr   ship.Transport
	calm atomic.Bool // deliver faithfully

	mu    sync.Mutex
	rng   *rand.Rand
	later []ship.Message // copies to deliver again
	kinds [6]int
}

func (f *flaky) Send(ctx context.Context, m ship.Message) error {
	if f.calm.Load() {
		return f.tr.Send(ctx, m)
	}
	f.mu.Lock()
	k := f.rng.IntN(len(f.kinds) + 4) // faults about 60% of the time
	var replay []ship.Message
	if k < len(f.kinds) {
		f.kinds[k]++
	}
	switch k {
	case 4: // keep a copy for later (the body is the shipper's: copy it)
		c := m
		c.Body = bytes.Clone(m.Body)
		c.Labels = slices.Clone(m.Labels)
		f.later = append(f.later, c)
	case 5:
		replay, f.later = f.later, nil
	}
	f.mu.Unlock()
	for _, r := range replay {
		_ = f.tr.Send(ctx, r) // a stale duplicate, whatever its fate
	}
	switch k {
	case 0:
		return errors.New("flaky: dropped before sending")
	case 1:
		if err := f.tr.Send(ctx, m); err != nil {
			return err
		}
		return errors.New("flaky: answer lost")
	case 2:
		_ = f.tr.Send(ctx, m)
		return f.tr.Send(ctx, m)
	case 3:
		time.Sleep(time.Millisecond)
	}
	return f.tr.Send(ctx, m)
}

// TestFaultExact: writers on a family of Sharded blobs and on a plain blob
// record while the shipper runs through a transport that drops, delays,
// duplicates and replays messages, and a receiver that answers 503 now and
// then. What the receiver merged, deduplicated by (sender, seq), is
// exactly what was recorded: SUMs, histogram counts, digest counts, per
// label set.
func TestFaultExact(t *testing.T) {
	srv := newServer(t)
	var n503 atomic.Int64
	srv.setFail(func(p post) (int, string) {
		if p.Seq%5 == 0 && n503.Add(1)%2 == 1 { // a seq answered 503 before it is merged
			return http.StatusServiceUnavailable, ""
		}
		return 0, ""
	})
	tr := &flaky{tr: &ship.HTTP{URL: srv.url()}, rng: rand.New(rand.NewPCG(1, 2))}
	sh, err := ship.New(tr, ship.Options{Interval: 2 * time.Millisecond, MinBackoff: time.Millisecond,
		MaxBackoff: 4 * time.Millisecond, Labels: []ship.Label{{"host", "h1"}}})
	require.NoError(t, err)
	tp := webTemplate(t)
	fam, err := family.New(tp, []string{"route"}, family.Options{Shards: 2})
	require.NoError(t, err)
	require.NoError(t, sh.AddFamily(fam))
	var mu sync.Mutex
	single := blob.New(tp, nil)
	require.NoError(t, sh.AddBlob(single, &mu, ship.Label{"route", "single"}))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- sh.Run(ctx) }()

	// Another goroutine ships on demand and reads the stats meanwhile.
	var aside sync.WaitGroup
	aside.Add(1)
	go func() {
		defer aside.Done()
		for ctx.Err() == nil {
			_ = sh.Ship(ctx)
			_ = sh.Stats()
			time.Sleep(5 * time.Millisecond)
		}
	}()

	routes := []string{"a", "b", "c"}
	const writers = 4
	var wg sync.WaitGroup
	wants := make([]map[string]*tally, writers)
	stop := make(chan struct{})
	for w := range writers {
		wants[w] = map[string]*tally{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := uint64(w)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				x = (x*1103515245 + 12345) % 1600
				r := routes[i%len(routes)]
				if i%7 == 0 {
					r = "single"
					mu.Lock()
					update(t, single, x)
					mu.Unlock()
				} else {
					b, err := fam.With(r)
					if err != nil {
						t.Error(err)
						return
					}
					update(t, b, x)
				}
				if wants[w][r] == nil {
					wants[w][r] = &tally{}
				}
				wants[w][r].record(x)
				if i%64 == 0 {
					time.Sleep(50 * time.Microsecond)
				}
			}
		}()
	}
	// Run until every fault happened a few times (at least 300ms, at
	// most 10s: a loaded machine ships fewer rounds).
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		tr.mu.Lock()
		least := slices.Min(tr.kinds[:])
		tr.mu.Unlock()
		if least >= 3 && time.Since(deadline.Add(-10*time.Second)) > 300*time.Millisecond {
			break
		}
	}
	close(stop)
	wg.Wait()
	cancel() // stops Run and the aside goroutine; Close ships the rest
	aside.Wait()
	require.ErrorIs(t, <-ran, context.Canceled)
	tr.calm.Store(true)
	srv.setFail(nil)
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	require.NoError(t, sh.Close(cctx))

	want := map[string]tally{}
	for _, m := range wants {
		for r, v := range m {
			w := want[labelsOf("host", "h1", "route", r)]
			w.add(*v)
			want[labelsOf("host", "h1", "route", r)] = w
		}
	}
	require.Equal(t, want, srv.totals())
	st := sh.Stats()
	require.Zero(t, st.Dropped)
	require.Zero(t, st.Rejected)
	require.Zero(t, st.Pending)
	// Per label set, first arrivals come in increasing seq and every
	// duplicate is at or under the highest seq merged: the collector's
	// high-water mark per sender and aggregate finds the same duplicates
	// as the set of (sender, seq).
	var dups int
	high := map[string]uint64{}
	for _, p := range srv.posts() {
		if p.Dup {
			dups++
			require.LessOrEqual(t, p.Seq, high[p.Labels], "a duplicate above the high-water mark")
			continue
		}
		require.Greater(t, p.Seq, high[p.Labels], "a first arrival under the high-water mark")
		high[p.Labels] = p.Seq
		require.LessOrEqual(t, p.Settled, p.Seq)
	}
	t.Logf("faults %v, %d duplicates refused, stats %+v", tr.kinds, dups, st)
	require.NotZero(t, dups, "the test must deliver duplicates")
	require.NotZero(t, st.Retried)
	require.NotZero(t, st.Refused)
	for _, k := range tr.kinds {
		require.NotZero(t, k, "every fault must happen: %v", tr.kinds)
	}
}

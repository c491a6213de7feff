package collector

import (
	"context"
	"math"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export/internal/fixture"
	"github.com/statsblob/statsblob/voi"
)

// A scrape waits (1/ScrapeShare - 1) times the last rendering after it
// ended; a client that leaves while it waits gets nothing rendered;
// ScrapeShare 1 never waits; a share outside [0, 1] is refused.
func TestScrapePacing(t *testing.T) {
	for _, c := range []struct {
		share float64
		wait  time.Duration // after a rendering of 100 ms
	}{
		{0, 400 * time.Millisecond}, // the default, 0.2
		{0.5, 100 * time.Millisecond},
		{1, 0},
	} {
		s, err := New(Config{Templates: fixture.Kitchen().Registry(), ScrapeShare: c.share})
		require.NoError(t, err)
		end := time.Now()
		s.paced(end.Add(-100*time.Millisecond), end)
		require.Equal(t, c.wait, s.paceUntil.Sub(end), "share %v", c.share)

		ctx, cancel := context.WithCancel(context.Background())
		r := httptest.NewRequest("GET", "/metrics", nil).WithContext(ctx)
		cancel()
		require.Equal(t, c.wait == 0, s.pace(r), "share %v: a client gone while waiting", c.share)

		s.paced(end.Add(-time.Hour), end.Add(-time.Hour+time.Millisecond))
		require.Equal(t, c.wait, s.paceUntil.Sub(end), "share %v: an older rendering moves nothing", c.share)
	}
	// A Prometheus scrape whose timeout leaves no room for the wait and
	// twice the last rendering (100 ms) does not wait; one with room does.
	s, err := New(Config{Templates: fixture.Kitchen().Registry()})
	require.NoError(t, err)
	end := time.Now()
	s.paced(end.Add(-100*time.Millisecond), end)
	for _, c := range []struct {
		timeout string
		waits   bool
	}{{"0.2", false}, {"0.5", true}, {"", true}, {"x", true}, {"-1", true}} {
		ctx, cancel := context.WithCancel(context.Background())
		r := httptest.NewRequest("GET", "/metrics", nil).WithContext(ctx)
		if c.timeout != "" {
			r.Header.Set(scrapeTimeoutHeader, c.timeout)
		}
		cancel()
		require.Equal(t, !c.waits, s.pace(r), "timeout %q", c.timeout)
	}

	for _, bad := range []float64{-0.1, 1.5, math.NaN()} {
		_, err := New(Config{Templates: fixture.Kitchen().Registry(), ScrapeShare: bad})
		require.ErrorIs(t, err, voi.ErrInvalid, "%v", bad)
	}
}

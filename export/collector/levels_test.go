package collector_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/ship"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// The level of a relative-update VOI is a gauge: the collector exports
// the sum of each sender's latest level, across windows, where a merge
// would keep the first blob's.
func TestLevelsSumSendersLatest(t *testing.T) {
	reg := tpl.NewRegistry()
	tp, err := reg.New("POOL")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "inflight", DType: voi.IntS64, Flags: voi.FlagRelUpdate, Stats: []tpl.StatSpec{tpl.Max()}}))
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Help: "Requests in flight."}))
	s, err := collector.New(collector.Config{Templates: reg, Now: func() time.Time { return time.Unix(1_700_000_000, 0) }})
	require.NoError(t, err)

	send := func(sender string, seq string, level int64) {
		t.Helper()
		b := blob.New(tp, nil)
		require.NoError(t, b.UpdateRelS64(0, level))
		r := httptest.NewRequest(http.MethodPost, "/v1/blobs?pool=db", bytes.NewReader(b.Bytes()))
		if sender != "" {
			r.Header.Set(ship.HeaderSender, sender)
			r.Header.Set(ship.HeaderSeq, seq)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		require.Equal(t, http.StatusNoContent, w.Code, w.Body.String())
	}
	want := func(level, max string) {
		t.Helper()
		require.NoError(t, testutil.GatherAndCompare(s.Registry(), strings.NewReader(`# HELP pool_inflight Requests in flight. (level (sum of relative updates))
# TYPE pool_inflight gauge
pool_inflight{pool="db"} `+level+`
# HELP pool_inflight_max Requests in flight. (MAX)
# TYPE pool_inflight_max gauge
pool_inflight_max{pool="db"} `+max+`
`), "pool_inflight", "pool_inflight_max"))
	}
	send("a", "1", 5)
	send("b", "1", 7)
	want("12", "7")
	send("a", "2", 2) // a's level is now 2
	want("9", "7")
	send("a", "1", 40) // a late copy of a's first message: a duplicate, neither merged nor a level
	want("9", "7")
	send("", "", 3) // no sender: one anonymous sender
	want("12", "7")
	s.Rotate() // levels outlive windows
	send("b", "2", 1)
	want("6", "1")
	s.Rotate()
	s.Rotate() // but not a whole window without a post of their label set
	send("c", "1", 4)
	want("4", "4")
}

// A label set's levels expire with its aggregate (LabelTTL): kept
// forever, the levels of every label set ever posted grew the heap
// without bound (about 1 KB each), and came back if it posted again.
func TestLevelsExpireWithTheirLabelSet(t *testing.T) {
	reg := tpl.NewRegistry()
	tp, err := reg.New("POOL")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "inflight", DType: voi.IntS64, Flags: voi.FlagRelUpdate, Stats: []tpl.StatSpec{tpl.Max()}}))
	ck := &clock{t: time.Unix(1_700_000_000, 0)}
	s, err := collector.New(collector.Config{Templates: reg, LabelTTL: time.Minute, Now: ck.now})
	require.NoError(t, err)
	send := func(sender string, level int64) {
		t.Helper()
		b := blob.New(tp, nil)
		require.NoError(t, b.UpdateRelS64(0, level))
		code, body := postH(t, s, "/v1/blobs", "pool=db", b.Bytes(), map[string]string{ship.HeaderSender: sender, ship.HeaderSeq: "1"})
		require.Equal(t, http.StatusNoContent, code, body)
	}
	level := func() string {
		t.Helper()
		lines, _ := scrapeLines(t, s, false)
		for _, l := range lines {
			if strings.HasPrefix(l, "pool_inflight{") {
				return l
			}
		}
		return ""
	}
	send("a", 5)
	send("b", 2)
	require.Equal(t, `pool_inflight{pool="db"} 7`, level())
	ck.set(ck.now().Add(2 * time.Minute))
	require.Equal(t, 1, s.Expire())
	send("c", 4)
	require.Equal(t, `pool_inflight{pool="db"} 4`, level(), "a's and b's levels left with the label set")
}

// A batch's blobs record their levels as single posts do: the levels of
// the batch's sender, the last frame of a label set winning.
func TestLevelsOfBatch(t *testing.T) {
	reg := tpl.NewRegistry()
	tp, err := reg.New("POOL")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "inflight", DType: voi.IntS64, Flags: voi.FlagRelUpdate, Stats: []tpl.StatSpec{tpl.Max()}}))
	s, err := collector.New(collector.Config{Templates: reg, Now: func() time.Time { return time.Unix(1_700_000_000, 0) }})
	require.NoError(t, err)

	batch := func(sender, seq string, frames ...any) {
		t.Helper()
		body := []byte(collector.BatchMagic)
		for i := 0; i < len(frames); i += 2 {
			b := blob.New(tp, nil)
			require.NoError(t, b.UpdateRelS64(0, int64(frames[i+1].(int))))
			body, err = collector.AppendBatchFrame(body, frames[i].(string), b.Bytes())
			require.NoError(t, err)
		}
		r := httptest.NewRequest(http.MethodPost, "/v1/batch", bytes.NewReader(body))
		r.Header.Set(ship.HeaderSender, sender)
		r.Header.Set(ship.HeaderSeq, seq)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		require.Equal(t, http.StatusNoContent, w.Code, w.Body.String())
	}
	batch("a", "1", "pool=db", 5, "pool=web", 1, "pool=db", 4)
	batch("b", "1", "pool=db", 7)
	require.NoError(t, testutil.GatherAndCompare(s.Registry(), strings.NewReader(`# HELP pool_inflight statsblob POOL inflight: level (sum of relative updates) (INT_S64)
# TYPE pool_inflight gauge
pool_inflight{pool="db"} 11
pool_inflight{pool="web"} 1
`), "pool_inflight"))
}

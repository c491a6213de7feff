package e2e_test

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/ship"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// metaTemplate is a latency in microseconds counted by requests, and
// requests in flight (a level), with metadata.
func metaTemplate(t *testing.T, reg *tpl.Registry) *tpl.Template {
	t.Helper()
	tp, err := reg.New("E2E_META")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "latency_us", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "requests", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 2, Name: "inflight", DType: voi.IntS64, Flags: voi.FlagRelUpdate, Stats: []tpl.StatSpec{tpl.Max()}}))
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Unit: "us", Help: "Request latency.", Count: "requests"}))
	require.NoError(t, tp.SetVOIMeta(2, tpl.VOIMeta{Help: "Requests in flight."}))
	return tp
}

type metaExpect struct {
	posts                         int
	sumSeconds, count, maxSeconds float64
	level                         float64
}

// postMeta posts blobs of two senders, two each, and returns what
// Prometheus must show.
func postMeta(t *testing.T, tp *tpl.Template, addr string) metaExpect {
	t.Helper()
	lat, err := blob.CountedOf(tp, 0)
	require.NoError(t, err)
	var w metaExpect
	var sumUS, maxUS uint64
	levels := map[string]int64{}
	for i, m := range []struct {
		sender string
		lat    []uint32
		level  int64 // the sender's level after this blob
	}{
		{"a", []uint32{1200, 800}, 3},
		{"b", []uint32{4000}, 5},
		{"a", []uint32{250, 15000, 300}, 1},
		{"b", []uint32{999}, 6},
	} {
		b := blob.New(tp, nil)
		for _, v := range m.lat {
			require.NoError(t, lat.UpdateU32(b, v))
			sumUS += uint64(v)
			maxUS = max(maxUS, uint64(v))
			w.count++
		}
		require.NoError(t, b.UpdateRelS64(2, m.level))
		levels[m.sender] = m.level
		r, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/blobs?src=meta", bytes.NewReader(b.Bytes()))
		require.NoError(t, err)
		r.Header.Set(ship.HeaderSender, m.sender)
		r.Header.Set(ship.HeaderSeq, strconv.Itoa(i+1))
		resp, err := http.DefaultClient.Do(r)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", body)
		w.posts++
	}
	w.sumSeconds, w.maxSeconds = float64(sumUS)/1e6, float64(maxUS)/1e6
	for _, l := range levels {
		w.level += float64(l)
	}
	return w
}

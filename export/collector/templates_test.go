package collector_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/export/internal/fixture"
	"github.com/statsblob/statsblob/ship"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// kitchenV2 is another version of the kitchen template: same name, one VOI.
func kitchenV2(t testing.TB) *tpl.Template {
	t.Helper()
	tp, err := tpl.NewRegistry().New("KITCHEN")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "bytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	return tp
}

func v2Blob(t testing.TB, tp *tpl.Template, v uint64) []byte {
	b := blob.New(tp, nil)
	require.NoError(t, b.UpdateU64(0, v))
	return b.Bytes()
}

func templatesPost(t *testing.T, h http.Handler, body string) (int, string) {
	r := httptest.NewRequest(http.MethodPost, "/v1/templates", strings.NewReader(body))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

// TestTemplateVersions: a templates file with two versions of one name
// loads; both versions are accepted side by side; POST /v1/templates adds
// a version at run time (refused with 422 before), GET /v1/templates lists
// them; with a DataDir, an uploaded version's posts replay after a restart
// whose configuration does not have it.
func TestTemplateVersions(t *testing.T) {
	k1 := fixture.Kitchen()
	k2 := kitchenV2(t)
	require.NotEqual(t, k1.Hash(), k2.Hash())
	file, err := json.Marshal([]*tpl.Template{k1, k2})
	require.NoError(t, err)
	_, err = tpl.ReadJSONList(tpl.NewRegistry(), file)
	require.ErrorIs(t, err, voi.ErrExists, "one registry cannot hold both")
	ts, err := collector.ParseTemplates(file)
	require.NoError(t, err)
	require.Equal(t, []uint32{k1.Hash(), k2.Hash()}, []uint32{ts[0].Hash(), ts[1].Hash()})

	dir := t.TempDir()
	cfg := collector.Config{MoreTemplates: ts, DataDir: dir, NoSync: true}
	s, err := collector.New(cfg)
	require.NoError(t, err)
	kb := fixture.KitchenBlob(k1).Bytes()
	for _, p := range []struct {
		q    string
		body []byte
	}{{"v=1", kb}, {"v=2", v2Blob(t, k2, 5)}, {"v=2", v2Blob(t, k2, 7)}} {
		code, body := post(t, s, http.MethodPost, p.q, p.body)
		require.Equal(t, 204, code, body)
	}
	code, body, _ := get(t, s, "/v1/aggregate?tpl=KITCHEN", nil)
	require.Equal(t, http.StatusConflict, code)
	require.Contains(t, body, "several versions of template \"KITCHEN\"")
	code, _, h := get(t, s, "/v1/aggregate?tpl=KITCHEN&v=2", nil)
	require.Equal(t, 200, code)
	require.Equal(t, "2", h.Get("Statsblob-Blobs"))

	// A third version, uploaded.
	k3, err := tpl.NewRegistry().New("KITCHEN")
	require.NoError(t, err)
	require.NoError(t, k3.AddVOI(tpl.VOIDef{ID: 0, Name: "bytes", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max()}}))
	b3 := blob.New(k3, nil)
	require.NoError(t, b3.UpdateU32(0, 9))
	code, body = post(t, s, http.MethodPost, "v=3", b3.Bytes())
	require.Equal(t, 422, code, body)
	j3, err := json.Marshal(k3)
	require.NoError(t, err)
	code, body = templatesPost(t, s, string(j3))
	require.Equal(t, 200, code, body)
	require.Equal(t, fmt.Sprintf(`[{"name":"KITCHEN","hash":%d,"new":true}]`+"\n", k3.Hash()), body)
	code, body = templatesPost(t, s, string(j3))
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"new":false`)
	code, body = post(t, s, http.MethodPost, "v=3", b3.Bytes())
	require.Equal(t, 204, code, body)
	kitchenLower, err := tpl.NewRegistry().New("kitchen") // KITCHEN's metric names
	require.NoError(t, err)
	require.NoError(t, kitchenLower.AddVOI(tpl.VOIDef{ID: 0, Name: "bytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	jl, err := json.Marshal(kitchenLower)
	require.NoError(t, err)
	for _, bad := range []string{"", "[", "{}", `[{"format":"statsblob-template"}]`, "7",
		`{"format":"statsblob-template","version":2,"name":"A","hash":281853027,"vois":[]}`, // no VOIs: the client's fault
		string(jl), // would export kitchen_bytes_total{...} beside KITCHEN's: one series twice
	} {
		code, body = templatesPost(t, s, bad)
		require.Equal(t, 400, code, "%q: %s", bad, body)
	}
	require.Contains(t, body, `template "kitchen": its metrics would be named as those of template "KITCHEN" (kitchen_...)`)

	code, body, _ = get(t, s, "/v1/templates", nil)
	require.Equal(t, 200, code)
	listed, err := collector.ParseTemplates([]byte(body))
	require.NoError(t, err)
	require.Equal(t, []uint32{k1.Hash(), k2.Hash(), k3.Hash()}, []uint32{listed[0].Hash(), listed[1].Hash(), listed[2].Hash()})
	code, body, _ = get(t, s, "/v1/templates?wide=1", nil)
	require.Equal(t, 200, code)
	wide, err := collector.ParseTemplates([]byte(body))
	require.NoError(t, err)
	require.Len(t, wide, 3)
	w1, err := tpl.Widen(k1)
	require.NoError(t, err)
	require.Equal(t, w1.Hash(), wide[0].Hash())
	require.Equal(t, "KITCHEN", wide[0].Name())

	// A crash; the restart is configured with the first version only.
	collector.Crash(s)
	s2, err := collector.New(collector.Config{MoreTemplates: ts[:1], DataDir: dir, NoSync: true})
	require.NoError(t, err)
	require.Equal(t, s.Merged(), s2.Merged())
	code, body = post(t, s2, http.MethodPost, "v=3", b3.Bytes())
	require.Equal(t, 204, code, body)
}

// FuzzParseTemplates: ParseTemplates never panics, its errors are
// tpl.ReadJSON's (invalid, too big, a VOI twice); what it accepts writes
// back (json.Marshal) to a document it reads as the same templates.
func FuzzParseTemplates(f *testing.F) {
	one, _ := json.Marshal(fixture.Kitchen())
	two, _ := json.Marshal([]*tpl.Template{fixture.Kitchen(), kitchenV2(f)})
	f.Add(one)
	f.Add(two)
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"format":"statsblob-template","version":2,"name":"A","vois":[]}]`))
	f.Fuzz(func(t *testing.T, p []byte) {
		ts, err := collector.ParseTemplates(p)
		if err != nil {
			require.True(t, errorsIsAny(err, voi.ErrInvalid, voi.ErrTooBig, voi.ErrExists), err)
			return
		}
		again, err := json.Marshal(ts)
		require.NoError(t, err)
		back, err := collector.ParseTemplates(again)
		require.NoError(t, err)
		require.Len(t, back, len(ts))
		for i := range ts {
			require.Equal(t, ts[i].Hash(), back[i].Hash())
			require.Equal(t, ts[i].Name(), back[i].Name())
		}
	})
}

func errorsIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// Uploads past MaxTemplates are refused whole (429, counted): a template
// once known stays known, so before, any client could grow the server by
// 130 KB a 500-VOI version without end.
func TestTemplatesBounded(t *testing.T) {
	k1 := fixture.Kitchen()
	s, err := collector.New(collector.Config{Templates: k1.Registry(), MaxTemplates: 3})
	require.NoError(t, err)
	version := func(name string) string {
		tp, err := tpl.NewRegistry().New(name)
		require.NoError(t, err)
		require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "n", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
		p, err := json.Marshal(tp)
		require.NoError(t, err)
		return string(p)
	}
	code, body := templatesPost(t, s, "["+version("A")+","+version("B")+"]")
	require.Equal(t, 200, code, body)
	code, body = templatesPost(t, s, "["+version("A")+","+version("C")+"]")
	require.Equal(t, 429, code)
	require.Equal(t, "collector: 3 templates known and 1 new, at most 3 (-max-templates): too many templates\n", body)
	require.Equal(t, 1.0, hits(t, s, "templates"))
	code, body, _ = get(t, s, "/v1/templates", nil)
	require.Equal(t, 200, code)
	listed, err := collector.ParseTemplates([]byte(body))
	require.NoError(t, err)
	require.Len(t, listed, 3, "nothing of the refused upload was added")
	code, body = templatesPost(t, s, version("B")) // known: nothing new, no limit
	require.Equal(t, 200, code, body)
}

// Two versions of a template posted under one label set in a window are
// exported as distinct series: the older version's carry VersionLabel,
// the newest's keep their names and labels (before, kitchen_bytes_total
// {host="a"} came twice, and Prometheus kept one of the two samples).
func TestVersionsShareNoSeries(t *testing.T) {
	s, k1, k2 := kitchenVersions(t)
	code, body := post(t, s, http.MethodPost, "host=a", fixture.KitchenBlob(k1).Bytes())
	require.Equal(t, http.StatusNoContent, code, body)
	code, body = post(t, s, http.MethodPost, "host=b", fixture.KitchenBlob(k1).Bytes())
	require.Equal(t, http.StatusNoContent, code, body)
	code, body = post(t, s, http.MethodPost, "host=a", v2Blob(t, k2, 5))
	require.Equal(t, http.StatusNoContent, code, body)

	// The label is the collector's: no post or token may carry it (else
	// a sender could make the two versions one series again).
	code, body = post(t, s, http.MethodPost, "host=a&"+collector.VersionLabel+"=x", v2Blob(t, k2, 5))
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, body, `label name "statsblob_template_hash" is the collector's own`)
	_, err := collector.ParseTokens([]byte(`[{"token": "` + anyToken + `", "post": true, "labels": {"statsblob_template_hash": "1"}}]`))
	require.ErrorIs(t, err, voi.ErrInvalid)

	lines, _ := scrapeLines(t, s, false)
	seen := map[string]bool{}
	for _, l := range lines {
		if strings.HasPrefix(l, "#") || l == "" {
			continue
		}
		series := l[:strings.LastIndexByte(l, ' ')]
		require.False(t, seen[series], "series %s twice", series)
		seen[series] = true
	}
	require.Equal(t, []string{
		fmt.Sprintf(`kitchen_bytes_total{host="a",statsblob_template_hash="%08x"} 1448`, k1.Hash()),
		`kitchen_bytes_total{host="a"} 5`,
		`kitchen_bytes_total{host="b"} 1448`, // no other version shares host=b
	}, scrapedWith(t, s, "kitchen_bytes_total"))
}

// scrapedWith returns the lines of a scrape of s that start with prefix,
// sorted.
func scrapedWith(t *testing.T, s *collector.Server, prefix string) []string {
	t.Helper()
	var got []string
	lines, _ := scrapeLines(t, s, false)
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			got = append(got, l)
		}
	}
	slices.Sort(got)
	return got
}

// Versions whose wide forms are one template (a VOI's INT_U32 and INT_U64
// both widen to INT_U64) are told apart by the template their senders
// posted (export.Named.Posted), not by the aggregates' wide one (before,
// the two were one series twice).
func TestVersionsWithOneWideForm(t *testing.T) {
	mk := func(dt voi.DType) *tpl.Template {
		tp, err := tpl.NewRegistry().New("KITCHEN")
		require.NoError(t, err)
		require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "bytes", DType: dt, Stats: []tpl.StatSpec{tpl.Sum()}}))
		return tp
	}
	v1, v2 := mk(voi.IntU32), mk(voi.IntU64)
	w1, err := tpl.Widen(v1)
	require.NoError(t, err)
	w2, err := tpl.Widen(v2)
	require.NoError(t, err)
	require.Equal(t, w1.Hash(), w2.Hash(), "one wide form")
	s, err := collector.New(collector.Config{MoreTemplates: []*tpl.Template{v1, v2}})
	require.NoError(t, err)
	b1 := blob.New(v1, nil)
	require.NoError(t, b1.UpdateU32(0, 3))
	code, body := post(t, s, http.MethodPost, "host=a", b1.Bytes())
	require.Equal(t, http.StatusNoContent, code, body)
	code, body = post(t, s, http.MethodPost, "host=a", v2Blob(t, v2, 5))
	require.Equal(t, http.StatusNoContent, code, body)
	require.Equal(t, []string{
		fmt.Sprintf(`kitchen_bytes_total{host="a",statsblob_template_hash="%08x"} 3`, v1.Hash()),
		`kitchen_bytes_total{host="a"} 5`,
	}, scrapedWith(t, s, "kitchen_bytes_total"))
}

// Each version's series carries its own senders' levels (before, levels
// were kept by template name, and both series carried the sum of both
// versions' senders, counting the gauge twice).
func TestVersionsKeepTheirOwnLevels(t *testing.T) {
	pool := func(extra bool) *tpl.Template {
		tp, err := tpl.NewRegistry().New("POOL")
		require.NoError(t, err)
		require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "inflight", DType: voi.IntS64, Flags: voi.FlagRelUpdate, Stats: []tpl.StatSpec{tpl.Max()}}))
		if extra {
			require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "other", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
		}
		return tp
	}
	v1, v2 := pool(false), pool(true)
	s, err := collector.New(collector.Config{MoreTemplates: []*tpl.Template{v1, v2}})
	require.NoError(t, err)
	send := func(tp *tpl.Template, sender string, level int64) {
		t.Helper()
		b := blob.New(tp, nil)
		require.NoError(t, b.UpdateRelS64(0, level))
		code, body := postH(t, s, "/v1/blobs", "pool=db", b.Bytes(), map[string]string{ship.HeaderSender: sender, ship.HeaderSeq: "1"})
		require.Equal(t, http.StatusNoContent, code, body)
	}
	send(v1, "old", 5)
	send(v2, "new", 7)
	require.Equal(t, []string{
		fmt.Sprintf(`pool_inflight{pool="db",statsblob_template_hash="%08x"} 5`, v1.Hash()),
		`pool_inflight{pool="db"} 7`,
	}, scrapedWith(t, s, "pool_inflight{"))
}

// The query API tells versions that share a label set apart: VersionLabel
// matches the hash each aggregate was posted as, so it selects the older
// version's aggregate (whose series carry the label) and the newest's
// (whose series do not). Before, the 409 said "tell them apart with a
// label" and no label could, and later only the older version could be
// selected.
func TestQueryVersionsSharingALabelSet(t *testing.T) {
	s, k1, k2 := kitchenVersions(t)
	code, body := post(t, s, http.MethodPost, "host=a", fixture.KitchenBlob(k1).Bytes())
	require.Equal(t, http.StatusNoContent, code, body)
	code, body = post(t, s, http.MethodPost, "host=a", v2Blob(t, k2, 5))
	require.Equal(t, http.StatusNoContent, code, body)

	code, body, _ = get(t, s, "/v1/aggregate?tpl=KITCHEN&host=a", nil)
	require.Equal(t, http.StatusConflict, code, body)
	require.Contains(t, body, fmt.Sprintf("(hashes %d (%08x) and %d (%08x)): tell them apart with a label (statsblob_template_hash=HASH, HASH the hexadecimal form, selects a version)",
		k1.Hash(), k1.Hash(), k2.Hash(), k2.Hash()))
	code, body, h := get(t, s, fmt.Sprintf("/v1/aggregate?tpl=KITCHEN&host=a&%s=%08x", collector.VersionLabel, k1.Hash()), nil)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, "1", h.Get("Statsblob-Blobs"))
	w1, err := tpl.Widen(k1)
	require.NoError(t, err)
	back, err := blob.FromBytes([]byte(body), nil)
	require.NoError(t, err)
	require.Equal(t, w1.Hash(), back.TplHash(), "the older version's aggregate")

	code, body, h = get(t, s, fmt.Sprintf("/v1/aggregate?tpl=KITCHEN&host=a&%s=%08x", collector.VersionLabel, k2.Hash()), nil)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, "1", h.Get("Statsblob-Blobs"))
	w2, err := tpl.Widen(k2)
	require.NoError(t, err)
	back, err = blob.FromBytes([]byte(body), nil)
	require.NoError(t, err)
	require.Equal(t, w2.Hash(), back.TplHash(), "the newest version's aggregate")

	code, body, _ = get(t, s, fmt.Sprintf("/v1/aggregates?tpl=KITCHEN&%s=%08x", collector.VersionLabel, k2.Hash()), nil)
	require.Equal(t, http.StatusOK, code, body)
	require.JSONEq(t, fmt.Sprintf(`[{"template":"KITCHEN","hash":%d,"labels":{"host":"a"},"blobs":1,"window_start":%q}]`,
		w2.Hash(), h.Get("Statsblob-Window-Start")), body)
	code, body, _ = get(t, s, fmt.Sprintf("/v1/aggregate?tpl=KITCHEN&%s=0000000*", collector.VersionLabel), nil)
	require.Equal(t, http.StatusNotFound, code, body)
}

// kitchenVersions returns a server that knows KITCHEN (k1) from its
// configuration and KITCHEN's second version (k2, kitchenV2) from an
// upload, so k2 is the newest.
func kitchenVersions(t *testing.T) (s *collector.Server, k1, k2 *tpl.Template) {
	t.Helper()
	k1 = fixture.Kitchen()
	s, err := collector.New(collector.Config{Templates: k1.Registry()})
	require.NoError(t, err)
	k2 = kitchenV2(t)
	j2, err := json.Marshal(k2)
	require.NoError(t, err)
	code, body := templatesPost(t, s, string(j2))
	require.Equal(t, http.StatusOK, code, body)
	return s, k1, k2
}

// TestUpgradeExposition: the posts of a rolling upgrade (two versions of
// KITCHEN under host=a, one under host=b) give fixture.UpgradeExposition,
// the exposition the NATS JetStream collector's test expects of the same
// posts too (export/natsjs, TestVersionsShareNoSeries).
func TestUpgradeExposition(t *testing.T) {
	file, posts := fixture.Upgrade()
	s, err := collector.New(collector.Config{MoreTemplates: file})
	require.NoError(t, err)
	for _, p := range posts {
		code, body := post(t, s, http.MethodPost, "host="+p.Host, p.Body)
		require.Equal(t, http.StatusNoContent, code, body)
	}
	r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	require.Equal(t, http.StatusOK, w.Code)
	var got strings.Builder
	for _, l := range strings.SplitAfter(w.Body.String(), "\n") {
		if strings.HasPrefix(strings.TrimPrefix(strings.TrimPrefix(l, "# HELP "), "# TYPE "), "kitchen_") {
			got.WriteString(l)
		}
	}
	require.Equal(t, fixture.UpgradeExposition, got.String())
}

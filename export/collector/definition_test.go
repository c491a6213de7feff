package collector_test

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/export/internal/fixture"
	"github.com/statsblob/statsblob/statdef"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

var kitchenVOIs = []string{"bytes", "delta", "acklen", "lat", "ratio", "win", "ranges", "sig", "cons", "rtt", "diff"}

// kitchenDef is the definition of the kitchen template: all on, but for
// the lines given by VOI name.
func kitchenDef(all string, lines map[string]string) string {
	var b strings.Builder
	b.WriteString(all + "\n")
	for _, v := range kitchenVOIs {
		l, ok := lines[v]
		if !ok {
			l = "on=1"
		}
		b.WriteString("name=" + v + " " + l + "\n")
	}
	return b.String()
}

// defDo sends a definition request and returns the status and answer.
func defDo(t *testing.T, s http.Handler, method, query, token, body string) (int, string) {
	t.Helper()
	w := do(t, s, method, "/v1/definition?"+query, token, []byte(body))
	return w.Code, w.Body.String()
}

// families returns the metric families of the scrape's aggregates.
func families(t *testing.T, s *collector.Server) []string {
	t.Helper()
	var out []string
	for _, l := range aggLines(t, s) {
		name, _, _ := strings.Cut(l, "{")
		name, _, _ = strings.Cut(name, " ")
		out = append(out, name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// kitchenBlobs returns the current aggregates of template name.
func kitchenBlobs(s *collector.Server, name string) []export.Named {
	return slices.DeleteFunc(s.Blobs(), func(n export.Named) bool { return n.Template.Name() != name })
}

// resetWant returns the blobs of ns with VOIs ids reset by blob.ResetVOI.
func resetWant(t *testing.T, ns []export.Named, ids ...int32) [][]byte {
	t.Helper()
	var out [][]byte
	for _, n := range ns {
		b := n.Blob.Clone()
		for _, id := range ids {
			require.NoError(t, b.ResetVOI(id))
		}
		out = append(out, b.Bytes())
	}
	return out
}

func blobBytes(ns []export.Named) [][]byte {
	var out [][]byte
	for _, n := range ns {
		out = append(out, n.Blob.Bytes())
	}
	return out
}

func changes(t *testing.T, s *collector.Server) []string {
	t.Helper()
	lines, _ := scrapeLines(t, s, false)
	return slices.DeleteFunc(lines, func(l string) bool { return !strings.HasPrefix(l, "statsblob_collector_definition_changes_total") })
}

// TestDefinition: on=0 stops exporting a VOI (or all) while the aggregates
// keep adding it up; data=reset gives the bytes blob.ResetVOI gives; the
// definition reads back with its times; bad requests change nothing.
func TestDefinition(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	other, err := tpl.NewRegistry().New("OTHER")
	require.NoError(t, err)
	require.NoError(t, other.AddVOI(tpl.VOIDef{ID: 0, Name: "n", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	s, err := collector.New(collector.Config{MoreTemplates: []*tpl.Template{fixture.Kitchen(), other}, Now: c.now})
	require.NoError(t, err)
	kb := fixture.KitchenBlob(fixture.Kitchen()).Bytes()
	for _, q := range []string{"host=a", "host=a", "host=b"} {
		code, body := post(t, s, http.MethodPost, q, kb)
		require.Equal(t, http.StatusNoContent, code, body)
	}
	code, body := post(t, s, http.MethodPost, "host=a", v2Blob(t, other, 7))
	require.Equal(t, http.StatusNoContent, code, body)
	all := families(t, s)
	require.Contains(t, all, "kitchen_bytes_total")
	require.Contains(t, all, "other_n_total")

	code, body = defDo(t, s, http.MethodGet, "tpl=KITCHEN", "", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, kitchenDef("on=1", nil), body)

	// Off: not exported, still added up; the query API still answers it.
	_, aggBefore, _ := get(t, s, "/v1/aggregate?tpl=KITCHEN", nil)
	c.set(c.now().Add(time.Second))
	code, body = defDo(t, s, http.MethodPost, "tpl=KITCHEN", "", "name=bytes on=0\n")
	require.Equal(t, http.StatusOK, code, body)
	off := map[string]string{"bytes": "on=0 stopped=2026-11-27T12:00:01Z"}
	require.Equal(t, kitchenDef("on=1", off), body)
	require.Equal(t, slices.DeleteFunc(slices.Clone(all), func(n string) bool { return n == "kitchen_bytes_total" }), families(t, s))
	_, aggAfter, _ := get(t, s, "/v1/aggregate?tpl=KITCHEN", nil)
	require.Equal(t, aggBefore[32:], aggAfter[32:]) // all but the merged blob's header times
	code, _ = post(t, s, http.MethodPost, "host=a", kb)
	require.Equal(t, http.StatusNoContent, code)
	closed := s.Rotate() // a closed window ships with the same settings
	for _, n := range closed.Blobs {
		require.Equal(t, n.Template.Name() == "KITCHEN", n.Off != nil && n.Off(0), n.Labels)
	}
	for _, q := range []string{"host=a", "host=a", "host=a", "host=b"} {
		code, _ = post(t, s, http.MethodPost, q, kb)
		require.Equal(t, http.StatusNoContent, code)
	}
	code, _ = post(t, s, http.MethodPost, "host=a", v2Blob(t, other, 7))
	require.Equal(t, http.StatusNoContent, code)
	c.set(c.now().Add(time.Second))
	code, body = defDo(t, s, http.MethodPost, "tpl=KITCHEN", "", "name=bytes on=1")
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, kitchenDef("on=1", map[string]string{"bytes": "on=1 started=2026-11-27T12:00:02Z stopped=2026-11-27T12:00:01Z"}), body)
	require.Contains(t, aggLines(t, s), `kitchen_bytes_total{host="a"} 4344`, "complete: three posts of 1448 while off")

	// All off at once: no KITCHEN metric, OTHER's stay.
	code, body = defDo(t, s, http.MethodPost, "tpl=KITCHEN", "", "on=0")
	require.Equal(t, http.StatusOK, code, body)
	require.True(t, strings.HasPrefix(body, "on=0 stopped=2026-11-27T12:00:02Z\n"), body)
	require.Equal(t, []string{"other_n_total"}, families(t, s))
	code, _ = defDo(t, s, http.MethodPost, "tpl=KITCHEN", "", "on=1")
	require.Equal(t, http.StatusOK, code)

	// Reset one VOI, then all: the bytes of blob.ResetVOI; OTHER's kept.
	code, _ = post(t, s, http.MethodPost, "host=b", kb) // queued, not folded
	require.Equal(t, http.StatusNoContent, code)
	before, otherBefore := kitchenBlobs(s, "KITCHEN"), blobBytes(kitchenBlobs(s, "OTHER"))
	require.Len(t, before, 2)
	code, body = defDo(t, s, http.MethodPost, "tpl=KITCHEN", "", "name=rtt data=reset\nname=lat data=reset")
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, resetWant(t, before, 9, 3), blobBytes(kitchenBlobs(s, "KITCHEN")))
	require.Equal(t, otherBefore, blobBytes(kitchenBlobs(s, "OTHER")))
	before = kitchenBlobs(s, "KITCHEN")
	code, _ = defDo(t, s, http.MethodPost, "tpl=KITCHEN", "", "data=reset")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, resetWant(t, before, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10), blobBytes(kitchenBlobs(s, "KITCHEN")))
	require.Contains(t, aggLines(t, s), `kitchen_bytes_total{host="a"} 0`)
	code, _ = post(t, s, http.MethodPost, "host=a", kb)
	require.Equal(t, http.StatusNoContent, code)
	require.Contains(t, aggLines(t, s), `kitchen_bytes_total{host="a"} 1448`, "counts from the reset")
	require.Equal(t, []string{
		`statsblob_collector_definition_changes_total{change="off"} 2`,
		`statsblob_collector_definition_changes_total{change="on"} 2`,
		`statsblob_collector_definition_changes_total{change="reset"} 13`,
	}, changes(t, s))

	// Refusals change nothing.
	want := kitchenDef("on=1 started=2026-11-27T12:00:02Z stopped=2026-11-27T12:00:02Z",
		map[string]string{"bytes": "on=1 started=2026-11-27T12:00:02Z stopped=2026-11-27T12:00:01Z"})
	_, got := defDo(t, s, http.MethodGet, "tpl=KITCHEN", "", "")
	require.Equal(t, want, got)
	blobsBefore := blobBytes(s.Blobs())
	for _, r := range []struct {
		method, query, body string
		code                int
		msg                 string
	}{
		{http.MethodPost, "tpl=KITCHEN", "name=bytes on=0\nname=nope data=reset", 400,
			"definition: statdef: line 2: no VOI named \"nope\" in " + fixture.Kitchen().Spec() + ": invalid argument\n"},
		{http.MethodPost, "tpl=KITCHEN", "on=0\nname=rtt on=2", 400,
			"definition: statdef: line 2: \"on=2\": unknown key or value (name= first, on=0|1, data=reset): invalid argument\n"},
		{http.MethodPost, "tpl=KITCHEN", strings.Repeat(" ", statdef.MaxBody+1), 413, "definition: a body over 65536 bytes\n"},
		{http.MethodGet, "", "", 400, "definition: the query is tpl=NAME and nothing else\n"},
		{http.MethodGet, "tpl=KITCHEN&host=a", "", 400, "definition: the query is tpl=NAME and nothing else\n"},
		{http.MethodGet, "tpl=NOPE", "", 404, "definition: no known template is named \"NOPE\"\n"},
		{http.MethodDelete, "tpl=KITCHEN", "", 405, "definition: method DELETE: GET the definition, POST a change\n"},
	} {
		code, body := defDo(t, s, r.method, r.query, "", r.body)
		require.Equal(t, r.code, code, r)
		require.Equal(t, r.msg, body)
	}
	_, got = defDo(t, s, http.MethodGet, "tpl=KITCHEN", "", "")
	require.Equal(t, want, got)
	require.Equal(t, blobsBefore, blobBytes(s.Blobs()))
}

// TestDefinitionVersions: settings are by VOI name, for every version of
// the template; the definition lists the newest version's VOIs.
func TestDefinitionVersions(t *testing.T) {
	v2 := kitchenV2(t)
	s, err := collector.New(collector.Config{MoreTemplates: []*tpl.Template{fixture.Kitchen(), v2}})
	require.NoError(t, err)
	code, _ := post(t, s, http.MethodPost, "host=a", fixture.KitchenBlob(fixture.Kitchen()).Bytes())
	require.Equal(t, http.StatusNoContent, code)
	code, _ = post(t, s, http.MethodPost, "v=2", v2Blob(t, v2, 5))
	require.Equal(t, http.StatusNoContent, code)
	require.Contains(t, aggLines(t, s), `kitchen_bytes_total{v="2"} 5`)
	code, body := defDo(t, s, http.MethodPost, "tpl=KITCHEN", "", "name=bytes on=0\nname=bytes data=reset")
	require.Equal(t, http.StatusOK, code, body)
	require.Regexp(t, `^on=1\nname=bytes on=0 stopped=\S+\n$`, body)
	require.NotContains(t, families(t, s), "kitchen_bytes_total")
	require.Contains(t, families(t, s), "kitchen_lat_total")
	code, _ = defDo(t, s, http.MethodPost, "tpl=KITCHEN", "", "name=bytes on=1")
	require.Equal(t, http.StatusOK, code)
	lines := aggLines(t, s)
	require.Contains(t, lines, `kitchen_bytes_total{v="2"} 0`)
	require.Contains(t, lines, `kitchen_bytes_total{host="a"} 0`)
}

// TestDefinitionAccess: with tokens, changing the definition needs a post
// token allowed for the template that forces no labels; reading it, a
// read token.
func TestDefinitionAccess(t *testing.T) {
	toks, err := collector.ParseTokens([]byte(`[
		{"token": "` + apiToken + `", "templates": ["KITCHEN"], "labels": {"svc": "api"}},
		{"token": "` + anyToken + `", "post": true, "templates": ["KITCHEN"]},
		{"token": "` + readerToken + `", "read": true}]`))
	require.NoError(t, err)
	other, err := tpl.NewRegistry().New("OTHER")
	require.NoError(t, err)
	require.NoError(t, other.AddVOI(tpl.VOIDef{ID: 0, Name: "n", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	s, err := collector.New(collector.Config{MoreTemplates: []*tpl.Template{fixture.Kitchen(), other}, Tokens: toks})
	require.NoError(t, err)
	for _, c := range []struct {
		method, query, token string
		code                 int
		msg                  string
	}{
		{http.MethodGet, "tpl=KITCHEN", "", 401, "a read token is required (Authorization: Bearer TOKEN; -tokens)\n"},
		{http.MethodGet, "tpl=KITCHEN", anyToken, 401, "a read token is required (Authorization: Bearer TOKEN; -tokens)\n"},
		{http.MethodGet, "tpl=KITCHEN", readerToken, 200, kitchenDef("on=1", nil)},
		{http.MethodPost, "tpl=KITCHEN", "", 401, "a post token is required (Authorization: Bearer TOKEN; -tokens)\n"},
		{http.MethodPost, "tpl=KITCHEN", readerToken, 401, "a post token is required (Authorization: Bearer TOKEN; -tokens)\n"},
		{http.MethodPost, "tpl=KITCHEN", apiToken, 403, "a token that forces labels may not change the definition (-tokens)\n"},
		{http.MethodPost, "tpl=OTHER", anyToken, 403, "this token may not post template \"OTHER\" (-tokens)\n"},
		{http.MethodPost, "tpl=KITCHEN", anyToken, 200, ""},
	} {
		code, body := defDo(t, s, c.method, c.query, c.token, "name=rtt on=0")
		require.Equal(t, c.code, code, c)
		if c.msg != "" {
			require.Equal(t, c.msg, body, c)
		}
	}
	_, body := defDo(t, s, http.MethodGet, "tpl=KITCHEN", readerToken, "")
	require.Contains(t, body, "name=rtt on=0 stopped=")
}

// TestDefinitionDurable: with DataDir, settings and resets survive a
// crash and a restart, and posts after a reset replay onto it.
func TestDefinitionDurable(t *testing.T) {
	dir := t.TempDir()
	c := &clock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	cfg := collector.Config{DataDir: dir, Now: c.now, NoSync: true}
	s1, tp := newServer(t, cfg)
	kb := fixture.KitchenBlob(tp).Bytes()
	for _, q := range []string{"host=a", "host=a", "host=b"} {
		code, _ := post(t, s1, http.MethodPost, q, kb)
		require.Equal(t, http.StatusNoContent, code)
	}
	before := kitchenBlobs(s1, "KITCHEN")
	code, body := defDo(t, s1, http.MethodPost, "tpl=KITCHEN", "", "name=bytes on=0\nname=rtt data=reset")
	require.Equal(t, http.StatusOK, code, body)
	wantReset := resetWant(t, before, 9)
	require.Equal(t, wantReset, blobBytes(kitchenBlobs(s1, "KITCHEN")))
	code, _ = post(t, s1, http.MethodPost, "host=b", kb) // in the log after the reset's checkpoint
	require.Equal(t, http.StatusNoContent, code)
	wantDef := kitchenDef("on=1", map[string]string{"bytes": "on=0 stopped=2026-11-27T12:00:00Z"})
	_, got := defDo(t, s1, http.MethodGet, "tpl=KITCHEN", "", "")
	require.Equal(t, wantDef, got)
	wantLines := aggLines(t, s1)

	collector.Crash(s1)
	s2, _ := newServer(t, cfg)
	_, got = defDo(t, s2, http.MethodGet, "tpl=KITCHEN", "", "")
	require.Equal(t, wantDef, got)
	// The aggregates recovered from the checkpoint hold the same
	// statistics (their bytes differ where LoadState rebuilds them: the
	// header's times, a reset t-digest's unused nodes).
	require.Equal(t, wantLines, aggLines(t, s2))
	require.NotContains(t, families(t, s2), "kitchen_bytes_total")
	rtt, err := kitchenBlobs(s2, "KITCHEN")[0].Blob.Fetch(9, voi.Max)
	require.NoError(t, err)
	require.False(t, rtt.Valid, "host=a's rtt stays reset")

	c.set(c.now().Add(time.Minute))
	code, _ = defDo(t, s2, http.MethodPost, "tpl=KITCHEN", "", "on=0")
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, s2.Close())
	s3, _ := newServer(t, cfg)
	defer s3.Close()
	_, got = defDo(t, s3, http.MethodGet, "tpl=KITCHEN", "", "")
	require.Equal(t, kitchenDef("on=0 stopped=2026-11-27T12:01:00Z", map[string]string{"bytes": "on=0 stopped=2026-11-27T12:00:00Z"}), got)
	require.Empty(t, families(t, s3))
}

// FuzzDefinitionPost: any body is either refused (400) and changes
// neither the definition nor the aggregates, or applied (200), and then
// the definition it answers applies again without changing it.
func FuzzDefinitionPost(f *testing.F) {
	for _, s := range []string{"on=0", "name=rtt on=0\nname=bytes data=reset", "name=rtt", "=", "name= on=1", "data=reset on=1 started=x", "name=lat data=reset\n\non=1"} {
		f.Add(s)
	}
	kb := fixture.KitchenBlob(fixture.Kitchen()).Bytes()
	f.Fuzz(func(t *testing.T, text string) {
		s, _ := newServer(t, collector.Config{Now: func() time.Time { return time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC) }})
		code, _ := post(t, s, http.MethodPost, "host=a", kb)
		require.Equal(t, http.StatusNoContent, code)
		_, before := defDo(t, s, http.MethodGet, "tpl=KITCHEN", "", "")
		blobs := blobBytes(s.Blobs())
		code, body := defDo(t, s, http.MethodPost, "tpl=KITCHEN", "", text)
		if code != http.StatusOK {
			require.Equal(t, http.StatusBadRequest, code, body)
			require.True(t, strings.HasPrefix(body, "definition: statdef: line "), body)
			require.Equal(t, 1, strings.Count(body, "\n"), body)
			_, after := defDo(t, s, http.MethodGet, "tpl=KITCHEN", "", "")
			require.Equal(t, before, after)
			require.Equal(t, blobs, blobBytes(s.Blobs()))
			return
		}
		code, again := defDo(t, s, http.MethodPost, "tpl=KITCHEN", "", body)
		require.Equal(t, http.StatusOK, code, again)
		require.Equal(t, body, again)
	})
}

// TestDefinitionStoreFails: settings that cannot be stored in DataDir
// change nothing; a definitions file that is not one stops New.
func TestDefinitionStoreFails(t *testing.T) {
	dir := t.TempDir()
	cfg := collector.Config{DataDir: dir, NoSync: true}
	s, tp := newServer(t, cfg)
	code, _ := post(t, s, http.MethodPost, "host=a", fixture.KitchenBlob(tp).Bytes())
	require.Equal(t, http.StatusNoContent, code)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "definitions.json"), 0o755)) // a rename onto it fails
	code, body := defDo(t, s, http.MethodPost, "tpl=KITCHEN", "", "name=bytes on=0")
	require.Equal(t, http.StatusInternalServerError, code)
	require.Equal(t, "definition: the settings could not be stored in -data-dir: not applied\n", body)
	_, body = defDo(t, s, http.MethodGet, "tpl=KITCHEN", "", "")
	require.Equal(t, kitchenDef("on=1", nil), body)
	require.Contains(t, families(t, s), "kitchen_bytes_total")
	require.NoError(t, s.Close())

	require.NoError(t, os.Remove(filepath.Join(dir, "definitions.json")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "definitions.json"), []byte(`{"KITCHEN": [1]}`), 0o644))
	_, err := collector.New(collector.Config{Templates: tp.Registry(), DataDir: dir, NoSync: true})
	require.ErrorIs(t, err, voi.ErrInvalid)
}

package collector

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/internal/hashfmt"
	"github.com/statsblob/statsblob/tostr"
	"github.com/statsblob/statsblob/voi"
)

// The query API reads the aggregates back as blobs:
//
//	GET /v1/aggregates[?tpl=NAME][&window=-K][&LABEL=PATTERN...]
//
// lists the aggregates of a window as a JSON array, each
//
//	{"template": NAME, "hash": H, "labels": {NAME: VALUE, ...}, "blobs": N, "window_start": RFC 3339}
//
// (hash is the aggregate's: its template's wide form, tpl.Widen; blobs is
// how many posted blobs it holds), sorted by template hash and labels, and
//
//	GET /v1/aggregate?tpl=NAME[&window=-K][&LABEL=PATTERN...]
//
// merges the matching aggregates of template NAME (blob.Fold into an empty
// blob of the wide template: exact sums and counts, one t-digest merge)
// and answers the merged blob's bytes (application/octet-stream, with the
// headers Statsblob-Aggregates and Statsblob-Blobs: how many aggregates and
// posted blobs it merges, and Statsblob-Window-Start), or with Accept:
// application/json the object {"template", "hash", "aggregates", "blobs",
// "window_start", "blob"}, "blob" being the C's JSON rendering with names
// (package tostr). window 0 (the default) is the current window, -1 the
// last closed one, down to -History. An aggregate matches when it has
// every LABEL given and its value matches PATTERN, in which * stands for
// any run of characters (a pattern of * alone: any value); labels not
// given are not looked at. The query parameters tpl and window are not
// labels. A pattern for VersionLabel (statsblob_template_hash) matches
// the template hash every aggregate's senders posted, eight hexadecimal
// digits, whether or not its series carry the label: it selects any
// version, the newest included. Errors: 400 for a query parseQuery refuses, 404 when nothing
// matches, 409 when the matches are of several versions of the template
// (tell them apart with a label).

// MaxQueryMatchers bounds the label patterns of one query.
const MaxQueryMatchers = 32

// aggQuery is a parsed query of the query API.
type aggQuery struct {
	tpl     string    // template name; "" for any (list only)
	window  int       // 0: the current window; -k: the k-th closed one back
	version string    // pattern for the posted template hash; "" for any
	match   []matcher // sorted by name, without VersionLabel
}

// matcher is one label pattern.
type matcher struct{ name, pattern string }

// parseQuery parses the query API's raw query: tpl (required with needTpl),
// window (0 to -history), the version's pattern (VersionLabel) and label
// patterns (at most MaxQueryMatchers, each name once, names and patterns
// non-empty and at most maxBytes bytes). Errors wrap voi.ErrInvalid.
func parseQuery(raw string, needTpl bool, history, maxBytes int) (aggQuery, error) {
	var q aggQuery
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return q, fmt.Errorf("query: %w", voi.ErrInvalid)
	}
	if len(vals) > MaxQueryMatchers+3 { // tpl, window, VersionLabel and the label patterns
		return q, fmt.Errorf("query: %d parameters, at most %d label patterns: %w", len(vals), MaxQueryMatchers, voi.ErrInvalid)
	}
	for name, vs := range vals {
		switch {
		case len(vs) != 1:
			return q, fmt.Errorf("query: %.40q given %d times: %w", name, len(vs), voi.ErrInvalid)
		case name == "" || vs[0] == "":
			return q, fmt.Errorf("query: %.40q: an empty name or value: %w", name, voi.ErrInvalid)
		case len(name) > maxBytes || len(vs[0]) > maxBytes:
			return q, fmt.Errorf("query: %.40q: name or value over %d bytes: %w", name, maxBytes, voi.ErrInvalid)
		}
		v := vs[0]
		switch name {
		case "tpl":
			q.tpl = v
		case "window":
			w, err := strconv.Atoi(v)
			if err != nil || w > 0 || w < -history {
				if history == 0 {
					return q, fmt.Errorf("query: window %.40q: only 0, the current window: the collector keeps no closed windows (-history): %w", v, voi.ErrInvalid)
				}
				return q, fmt.Errorf("query: window %.40q: 0 (the current window) to -%d (-history): %w", v, history, voi.ErrInvalid)
			}
			q.window = w
		case VersionLabel:
			q.version = v
		default:
			q.match = append(q.match, matcher{name: name, pattern: v})
		}
	}
	if len(q.match) > MaxQueryMatchers {
		return q, fmt.Errorf("query: %d label patterns, at most %d: %w", len(q.match), MaxQueryMatchers, voi.ErrInvalid)
	}
	if needTpl && q.tpl == "" {
		return q, fmt.Errorf("query: tpl=NAME is required: %w", voi.ErrInvalid)
	}
	slices.SortFunc(q.match, func(a, b matcher) int { return strings.Compare(a.name, b.name) })
	return q, nil
}

// matches reports whether an aggregate of template name and labels (sorted
// by name), posted as a template of hash posted, matches q.
func (q *aggQuery) matches(name string, labels []export.Label, posted func() uint32) bool {
	if q.tpl != "" && q.tpl != name {
		return false
	}
	if q.version != "" && !glob(q.version, hashfmt.Hex(posted())) {
		return false
	}
	for _, m := range q.match {
		i, ok := slices.BinarySearchFunc(labels, m.name, func(l export.Label, n string) int { return strings.Compare(l.Name, n) })
		if !ok || !glob(m.pattern, labels[i].Value) {
			return false
		}
	}
	return true
}

// glob reports whether s matches pattern, in which * stands for any run of
// bytes and every other byte for itself. Linear in len(s) per star.
func glob(pattern, s string) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0:
			mark++
			p, i = star+1, mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// history keeps the last closed windows for the query API.
type history struct {
	mu      sync.Mutex
	windows []Closed // oldest first, at most Config.History
}

func (h *history) add(c Closed, n int) {
	if n <= 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.windows = append(h.windows, c)
	if len(h.windows) > n {
		h.windows = slices.Delete(h.windows, 0, len(h.windows)-n)
	}
}

// window returns the aggregates of window w (0 current, -k closed) with
// their blob counts; ok false if that closed window is not (yet) kept.
func (s *Server) window(w int) (named []export.Named, counts []uint64, ok bool) {
	if w == 0 {
		named, counts = s.set.BlobsCounts()
		return s.withVersions(named), counts, true // (closed windows have it)
	}
	s.hist.mu.Lock()
	defer s.hist.mu.Unlock()
	i := len(s.hist.windows) + w
	if i < 0 {
		return nil, nil, false
	}
	c := s.hist.windows[i]
	return c.Blobs, c.Counts, true
}

// aggregateJSON is one aggregate of GET /v1/aggregates.
type aggregateJSON struct {
	Template    string            `json:"template"`
	Hash        uint32            `json:"hash"`
	Labels      map[string]string `json:"labels"`
	Blobs       uint64            `json:"blobs"`
	WindowStart time.Time         `json:"window_start"`
}

// queryError answers a query API error: status and one line.
func queryError(w http.ResponseWriter, status int, format string, args ...any) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	msg := strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " ")
	_, _ = fmt.Fprintln(w, msg)
}

// matching parses r's query and returns the matching aggregates, or
// answers the error and returns ok false.
func (s *Server) matching(w http.ResponseWriter, r *http.Request, needTpl bool) (q aggQuery, named []export.Named, counts []uint64, ok bool) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		queryError(w, http.StatusMethodNotAllowed, "method %s not allowed: GET", r.Method)
		return q, nil, nil, false
	}
	q, err := parseQuery(r.URL.RawQuery, needTpl, s.cfg.History, s.cfg.MaxLabelBytes)
	if err != nil {
		queryError(w, http.StatusBadRequest, "%v", err)
		return q, nil, nil, false
	}
	all, allCounts, found := s.window(q.window)
	if !found {
		queryError(w, http.StatusNotFound, "window %d: no such closed window kept yet", q.window)
		return q, nil, nil, false
	}
	for i, n := range all {
		if q.matches(n.Template.Name(), n.Labels, func() uint32 { return s.postedHash(n) }) {
			named = append(named, n)
			counts = append(counts, allCounts[i])
		}
	}
	return q, named, counts, true
}

// listAggregates serves GET /v1/aggregates.
func (s *Server) listAggregates(w http.ResponseWriter, r *http.Request) {
	_, named, counts, ok := s.matching(w, r, false)
	if !ok {
		return
	}
	out := make([]aggregateJSON, len(named))
	for i, n := range named {
		labels := make(map[string]string, len(n.Labels))
		for _, l := range n.Labels {
			labels[l.Name] = l.Value
		}
		out[i] = aggregateJSON{Template: n.Template.Name(), Hash: n.Template.Hash(), Labels: labels,
			Blobs: counts[i], WindowStart: n.Start.UTC()}
	}
	p, _ := json.Marshal(out)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(p, '\n'))
}

// getAggregate serves GET /v1/aggregate.
func (s *Server) getAggregate(w http.ResponseWriter, r *http.Request) {
	q, named, counts, ok := s.matching(w, r, true)
	if !ok {
		return
	}
	if len(named) == 0 {
		queryError(w, http.StatusNotFound, "no aggregate of template %.40q matches", q.tpl)
		return
	}
	t := named[0].Template
	srcs := make([]*blob.Blob, len(named))
	var posts uint64
	for i, n := range named {
		if n.Template.Hash() != t.Hash() {
			queryError(w, http.StatusConflict, "the matching aggregates are of several versions of template %.40q (hashes %s and %s): tell them apart with a label (%s=HASH, HASH the hexadecimal form, selects a version)",
				q.tpl, hashfmt.String(s.postedHash(named[0])), hashfmt.String(s.postedHash(n)), VersionLabel)
			return
		}
		srcs[i] = n.Blob
		posts += counts[i]
	}
	merged := blob.New(t, blob.NewEnv(nil, 1))
	if _, err := blob.Fold(merged, srcs...); err != nil {
		queryError(w, http.StatusInternalServerError, "merging the aggregates: %v", err)
		return
	}
	h := w.Header()
	h.Set("Statsblob-Aggregates", strconv.Itoa(len(named)))
	h.Set("Statsblob-Blobs", strconv.FormatUint(posts, 10))
	h.Set("Statsblob-Window-Start", named[0].Start.UTC().Format(time.RFC3339Nano))
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		p, err := json.Marshal(struct {
			Template    string              `json:"template"`
			Hash        uint32              `json:"hash"`
			Aggregates  int                 `json:"aggregates"`
			Blobs       uint64              `json:"blobs"`
			WindowStart time.Time           `json:"window_start"`
			Blob        tostr.JSONMarshaler `json:"blob"`
		}{t.Name(), t.Hash(), len(named), posts, named[0].Start.UTC(), tostr.JSONMarshaler{Blob: merged, Flags: tostr.Meta, Template: t}})
		if err != nil {
			queryError(w, http.StatusInternalServerError, "rendering the aggregate: %v", err)
			return
		}
		h.Set("Content-Type", "application/json")
		_, _ = w.Write(append(p, '\n'))
		return
	}
	h.Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(merged.Bytes())
}

package collector

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/internal/wal"
	"github.com/statsblob/statsblob/statdef"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Definitions: which VOIs' statistics the collector exports, and resets of
// them, in the text form of Linux's statistics definition file (package
// statdef parses and prints it):
//
//	GET  /v1/definition?tpl=NAME   the definition of template NAME's aggregates
//	POST /v1/definition?tpl=NAME   apply the body's lines (at most statdef.MaxBody bytes),
//	                               answer the definition as it now is
//
// name=V on=0 stops exporting VOI V's statistics (and the derived metrics
// that read them) on /metrics, in OTLP pushes and in remote writes, while
// the aggregates keep adding them up, so that on=1 shows complete data
// again; on=0 without a name stops all of NAME's VOIs at once. The query
// API (/v1/aggregate) keeps answering every VOI: it serves blobs, not
// metrics. name=V data=reset resets V's statistics in every aggregate of
// NAME of the current window (what blob.ResetVOI gives the aggregate,
// queued blobs folded first, so none comes back), data=reset every VOI's;
// closed windows are left as they are. Settings are kept by template and
// VOI name, so they hold for every version of NAME, and a VOI the
// templates do not have yet is exported once it is switched on; the
// definition lists the VOIs of NAME's newest version, with started= and
// stopped= times (RFC 3339, UTC).
//
// Errors, each a one-line reason: 400 for a query other than tpl=NAME or
// a definition statdef refuses (the reason names the line, nothing is
// changed), 404 for a NAME no known template has, 405 for another method,
// 413 for a body over statdef.MaxBody, 401 and 403 as for POST
// /v1/templates (a post token allowed to post NAME and forcing no labels:
// a tenant's token may not switch or reset everyone's aggregates), and
// with Tokens GET needs a read token as /metrics does. With DataDir the
// settings are written to DIR/definitions.json (whole, fsynced) before
// they apply, and a reset is a record of the log, written in the same
// step as the reset (a checkpoint follows; one that fails undoes
// nothing), so both survive a restart: settings that could not be stored
// are a 500 and change nothing; a reset refused because the log had
// failed is a 503 (nothing reset), and one whose record could not be
// written a 503 too (it was made, and holds until a restart, which may
// undo it; the log is broken from then on); the settings of the same
// POST, stored first, stay.
// statsblob_collector_definition_changes_total{change} counts the
// settings turned on and off and the VOIs reset.

// defSetting is one VOI's (or all VOIs') setting and its times, as
// definitions.json keeps it.
type defSetting struct {
	Off     bool      `json:"off,omitempty"`
	Started time.Time `json:"started,omitzero"`
	Stopped time.Time `json:"stopped,omitzero"`
}

// tplDef is the settings of one template name.
type tplDef struct {
	All  defSetting            `json:"all"`
	VOIs map[string]defSetting `json:"vois,omitempty"`
}

func (d *tplDef) clone() *tplDef {
	c := &tplDef{All: d.All, VOIs: maps.Clone(d.VOIs)}
	if c.VOIs == nil {
		c.VOIs = map[string]defSetting{}
	}
	return c
}

// offPic is what is off of one template name: published, never modified.
type offPic struct {
	all  bool
	vois map[string]bool
}

// defs is the Server's definitions.
type defs struct {
	mu     sync.Mutex         // serialises changes (and definitions.json)
	byName map[string]*tplDef // by template name; replaced whole on change
	off    atomic.Pointer[map[string]*offPic]

	changes *prometheus.CounterVec
}

// defsFile is the settings' file in DataDir.
const defsFile = "definitions.json"

// initDefs sets up the definitions, loading DataDir's file if any.
func (s *Server) initDefs() error {
	s.defs.byName = map[string]*tplDef{}
	s.defs.changes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "statsblob_collector_definition_changes_total",
		Help: "Changes made through /v1/definition: VOI settings turned on or off, VOIs reset."}, []string{"change"})
	for _, c := range []string{"on", "off", "reset"} {
		s.defs.changes.WithLabelValues(c)
	}
	s.own.MustRegister(s.defs.changes)
	if s.cfg.DataDir == "" {
		return nil
	}
	p, err := os.ReadFile(filepath.Join(s.cfg.DataDir, defsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("collector: -data-dir: %w", err)
	}
	if err := json.Unmarshal(p, &s.defs.byName); err != nil || s.defs.byName == nil {
		return fmt.Errorf("collector: -data-dir %s: %s is not a definitions file: %v: %w", s.cfg.DataDir, defsFile, err, voi.ErrInvalid)
	}
	s.publishDefs()
	return nil
}

// publishDefs publishes what is off (s.defs.mu held, or before serving).
func (s *Server) publishDefs() {
	pics := map[string]*offPic{}
	for name, d := range s.defs.byName {
		p := &offPic{all: d.All.Off, vois: map[string]bool{}}
		for v, st := range d.VOIs {
			if st.Off {
				p.vois[v] = true
			}
		}
		if p.all || len(p.vois) > 0 {
			pics[name] = p
		}
	}
	s.defs.off.Store(&pics)
}

// withDefs sets the Off of the blobs ns whose template has VOIs switched
// off.
func (s *Server) withDefs(ns []export.Named) []export.Named {
	pics := s.defs.off.Load()
	if pics == nil || len(*pics) == 0 {
		return ns
	}
	for i := range ns {
		t := ns[i].Template
		if t == nil {
			continue
		}
		if p := (*pics)[t.Name()]; p != nil {
			ns[i].Off = func(id int32) bool {
				if p.all {
					return true
				}
				name, _ := t.VOIName(id)
				return p.vois[name]
			}
		}
	}
	return ns
}

// defView is the definition of one template name as statdef sees it,
// through its newest version t: a statdef.Switch over a working copy of
// the settings, and a statdef.Resetter that notes the VOIs to reset.
type defView struct {
	s      *Server
	t      *tpl.Template
	d      *tplDef
	on     int // settings turned on
	off    int // and off
	resets []string
}

func (v *defView) name(id int32) string { n, _ := v.t.VOIName(id); return n }

func (v *defView) set(st *defSetting, on bool) {
	if st.Off == !on {
		return
	}
	st.Off = !on
	if on {
		st.Started = v.s.cfg.Now().UTC()
		v.on++
	} else {
		st.Stopped = v.s.cfg.Now().UTC()
		v.off++
	}
}

// Set switches VOI id of t (statdef.Switch).
func (v *defView) Set(id int32, on bool) error {
	n := v.name(id)
	st := v.d.VOIs[n]
	v.set(&st, on)
	v.d.VOIs[n] = st
	return nil
}

// SetAll switches all of t's VOIs (statdef.Switch).
func (v *defView) SetAll(on bool) { v.set(&v.d.All, on) }

func state(st defSetting) blob.VOIState {
	return blob.VOIState{On: !st.Off, Started: st.Started, Stopped: st.Stopped}
}

// State returns VOI id's setting (statdef.Switch).
func (v *defView) State(id int32) blob.VOIState { return state(v.d.VOIs[v.name(id)]) }

// AllState returns the all-at-once setting (statdef.Switch).
func (v *defView) AllState() blob.VOIState { return state(v.d.All) }

// ResetVOI notes VOI id of t for a reset (statdef.Resetter).
func (v *defView) ResetVOI(id int32) error {
	v.resets = append(v.resets, v.name(id))
	return nil
}

// serveDefinition serves GET and POST /v1/definition?tpl=NAME.
func (s *Server) serveDefinition(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	name := q.Get("tpl")
	if err != nil || len(q) != 1 || len(q["tpl"]) != 1 || name == "" {
		queryError(w, http.StatusBadRequest, "definition: the query is tpl=NAME and nothing else")
		return
	}
	t := s.newest(name)
	if t == nil {
		queryError(w, http.StatusNotFound, "definition: no known template is named %.40q", name)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		s.defs.mu.Lock()
		d := s.defs.byName[name]
		s.defs.mu.Unlock()
		if d == nil {
			d = &tplDef{}
		}
		s.writeDefinition(w, &defView{s: s, t: t, d: d.clone()})
	case http.MethodPost, http.MethodPut:
		if !s.allowDefinition(w, r, t) {
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, statdef.MaxBody+1))
		switch {
		case err != nil:
			queryError(w, http.StatusBadRequest, "definition: reading the body: %v", err)
			return
		case len(body) > statdef.MaxBody:
			queryError(w, http.StatusRequestEntityTooLarge, "definition: a body over %d bytes", statdef.MaxBody)
			return
		}
		if v, status, err := s.applyDefinition(t, string(body)); err != nil {
			queryError(w, status, "definition: %v", err)
		} else {
			s.writeDefinition(w, v)
		}
	default:
		w.Header().Set("Allow", "GET, HEAD, POST, PUT")
		queryError(w, http.StatusMethodNotAllowed, "definition: method %s: GET the definition, POST a change", r.Method)
	}
}

// writeDefinition answers the definition v holds.
func (s *Server) writeDefinition(w http.ResponseWriter, v *defView) {
	var sb strings.Builder
	if err := (statdef.Def{Template: v.t, Control: v}).Write(&sb); err != nil {
		queryError(w, http.StatusInternalServerError, "definition: %v", err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = io.WriteString(w, sb.String())
}

// applyDefinition applies text to template t's name: the settings are
// stored (DataDir) and published, then the resets made (a record of the
// log, with DataDir). It returns the definition as it now is, or the status
// and reason of a refusal.
func (s *Server) applyDefinition(t *tpl.Template, text string) (*defView, int, error) {
	s.defs.mu.Lock()
	defer s.defs.mu.Unlock()
	old := s.defs.byName[t.Name()]
	if old == nil {
		old = &tplDef{}
	}
	v := &defView{s: s, t: t, d: old.clone()}
	if err := (statdef.Def{Template: t, Control: v, Reset: v}).Apply(text); err != nil {
		return nil, http.StatusBadRequest, err // statdef's: the line and why, nothing changed
	}
	if v.on+v.off > 0 {
		next := maps.Clone(s.defs.byName)
		next[t.Name()] = v.d
		if s.cfg.DataDir != "" {
			p, err := json.Marshal(next)
			if err == nil {
				err = wal.WriteFile(filepath.Join(s.cfg.DataDir, defsFile), p, !s.cfg.NoSync)
			}
			if err != nil {
				s.warn("the definition could not be stored: not applied", "err", err)
				return nil, http.StatusInternalServerError, errors.New("the settings could not be stored in -data-dir: not applied")
			}
		}
		s.defs.byName = next
		s.publishDefs()
		if s.text != nil {
			s.text.Forget() // its lines of the blobs were rendered with the old settings
		}
		s.defs.changes.WithLabelValues("on").Add(float64(v.on))
		s.defs.changes.WithLabelValues("off").Add(float64(v.off))
	}
	if len(v.resets) > 0 {
		if status, err := s.resetVOIs(t.Name(), v.resets); err != nil {
			return nil, status, err
		}
	}
	return v, 0, nil
}

// resetVOIs resets the VOIs names of every current aggregate of template
// name; with a log, as a record of the log (replayed by a restart), then
// a checkpoint.
func (s *Server) resetVOIs(name string, names []string) (int, error) {
	var rerr error
	reset := func() {
		_, rerr = s.set.ResetVOIs(resetIDs(name, names))
	}
	if s.log == nil {
		reset()
	} else {
		ran, err := s.logEvent(func() [][]byte {
			reset()
			return [][]byte{appendEvent(nil, &event{kind: recordReset, tpl: name, vois: names})}
		})
		switch {
		case !ran:
			return http.StatusServiceUnavailable, errors.New("the -data-dir log failed: nothing reset")
		case err != nil:
			return http.StatusServiceUnavailable, errors.New("the reset was made but the -data-dir log failed: a restart before it heals may undo it")
		}
		_ = s.checkpoint() // logged and counted: the log holds the reset
	}
	if rerr != nil {
		return http.StatusInternalServerError, rerr
	}
	s.defs.changes.WithLabelValues("reset").Add(float64(len(names)))
	return 0, nil
}

// resetIDs is what aggregate.Set.ResetVOIs resets of a reset of VOIs
// names of template name: those of its wide forms that have them.
func resetIDs(name string, names []string) func(wide *tpl.Template) []int32 {
	return func(wide *tpl.Template) []int32 {
		if wide.Name() != name {
			return nil
		}
		var ids []int32
		for _, n := range names {
			if d, ok := wide.VOI(n); ok {
				ids = append(ids, d.ID)
			}
		}
		return ids
	}
}

// allowDefinition checks a POST /v1/definition: with Tokens, a post token
// allowed to post template t and forcing no labels. It answers the
// refusal and returns false otherwise.
func (s *Server) allowDefinition(w http.ResponseWriter, r *http.Request, t *tpl.Template) bool {
	g, rej := s.poster(r.Header.Get("Authorization"))
	if rej == nil {
		_, rej = g.admit(t, nil)
	}
	if rej == nil && g != nil && len(g.labels) > 0 {
		rej = reject(http.StatusForbidden, "auth", "a token that forces labels may not change the definition (-tokens)")
	}
	if rej == nil {
		return true
	}
	s.rejected.WithLabelValues(rej.reason).Inc()
	if rej.authenticate {
		w.Header().Set("WWW-Authenticate", `Bearer realm="statsblob-collector"`)
	}
	queryError(w, rej.status, "%s", rej.msg)
	return false
}

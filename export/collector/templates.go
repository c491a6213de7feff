package collector

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/internal/hashfmt"
	"github.com/statsblob/statsblob/export/internal/versions"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Templates. The server accepts the blobs of every template it knows, found
// by hash: Config.Templates, Config.MoreTemplates, those uploaded with POST
// /v1/templates and those AddTemplates adds (the command's SIGHUP reload).
// Several versions of one template name live side by side: each is its
// own template, with its own hash and aggregates (the query API tells
// them apart by a label, or answers 409). A template once known stays
// known for the life of the server; with DataDir every template is also
// written to DIR/templates.json, so that a restart can replay the posts of
// templates uploaded or since removed from the templates file.
//
//	GET  /v1/templates          the known templates' JSON forms, a JSON array in the order they became known
//	GET  /v1/templates?wide=1   their wide forms (tpl.Widen), the templates of the query API's blobs
//	POST /v1/templates          a template's JSON form or an array of them (at most MaxTemplatesBody
//	                            bytes; a post token first, with -tokens): 200 with
//	                            [{"name","hash","new"}], 400 for a document ParseTemplates
//	                            refuses or a template without VOIs, 429 past MaxTemplates
//	                            (nothing is added then)

// ErrTooManyTemplates is the error of an add past Config.MaxTemplates.
var ErrTooManyTemplates = errors.New("too many templates")

// MaxTemplatesBody bounds a POST /v1/templates body.
const MaxTemplatesBody = 4 << 20

// ParseTemplates reads a templates file (see tpl.SplitJSONList): one
// template's JSON form or a JSON array of them. Two versions of one name
// may be in it: each template is read into a registry of its own
// (tpl.ReadJSONList with no registry). Errors wrap voi.ErrInvalid,
// voi.ErrTooBig (tpl.ReadJSON's limits), voi.ErrExists (a VOI defined twice),
// and name the template's index when data is an array.
func ParseTemplates(data []byte) ([]*tpl.Template, error) {
	ts, err := tpl.ReadJSONList(nil, data)
	if err != nil {
		if _, serr := tpl.SplitJSONList(data); serr != nil { // (on the error path only: say it is the file's shape)
			return nil, fmt.Errorf("collector: templates: %w", serr)
		}
		return nil, fmt.Errorf("collector: %w", err)
	}
	return ts, nil
}

// sameMetricNames returns a template of ts whose name differs from t's
// but whose metrics the exports would name alike ("web" and "WEB" both
// export web_...), or nil: their series would be one series twice, which a
// remote-write receiver refuses whole. (Versions of one name are told
// apart by export.VersionLabel.)
func sameMetricNames(ts []*tpl.Template, t *tpl.Template) *tpl.Template {
	name := export.Sanitize(t.Name())
	for _, o := range ts {
		if o.Name() != t.Name() && export.Sanitize(o.Name()) == name {
			return o
		}
	}
	return nil
}

// tplIndex is the known templates, replaced whole when one is added.
type tplIndex struct {
	byHash map[uint32]*tpl.Template
	order  []*tpl.Template
	// versions ranks the versions of each name by order, the last the
	// newest (versions.go).
	versions *versions.Index
}

// templates is the Server's known templates.
type templates struct {
	idx atomic.Pointer[tplIndex]
	mu  sync.Mutex // serialises adds (and the DataDir file)
}

// lookup finds a known template by hash; errors wrap voi.ErrNotFound.
func (s *Server) lookup(hash uint32) (*tpl.Template, error) {
	if t := s.tpls.idx.Load().byHash[hash]; t != nil {
		return t, nil
	}
	return nil, fmt.Errorf("collector: template hash %s: %w", hashfmt.String(hash), voi.ErrNotFound)
}

// initTemplates indexes the configured templates.
func (s *Server) initTemplates() error {
	idx := &tplIndex{byHash: map[uint32]*tpl.Template{}, versions: versions.New(nil)}
	s.tpls.idx.Store(idx)
	var list []*tpl.Template
	if r := s.cfg.Templates; r != nil {
		for i := range r.Len() {
			if t, err := r.ByID(i); err == nil && t != nil {
				list = append(list, t)
			}
		}
	}
	list = append(list, s.cfg.MoreTemplates...)
	if len(list) == 0 {
		return fmt.Errorf("collector: no templates: %w", voi.ErrInvalid)
	}
	_, err := s.addTemplates(list, false)
	return err
}

// AddTemplates makes ts known (those already known by hash are left as
// they are) and returns how many were new. A template without VOIs, or
// whose name differs from a known one's but exports under the same metric
// names ("web" and "WEB"), is refused (voi.ErrInvalid), and none is added. Past Config.MaxTemplates it
// adds none and the error wraps ErrTooManyTemplates. With DataDir, the known
// templates are written to DIR/templates.json first; an error writing it
// adds nothing. Aggregates are never touched: the command's SIGHUP reload
// calls it with the templates file's templates.
func (s *Server) AddTemplates(ts []*tpl.Template) (int, error) {
	return s.addTemplates(ts, true)
}

func (s *Server) addTemplates(ts []*tpl.Template, persist bool) (int, error) {
	s.tpls.mu.Lock()
	defer s.tpls.mu.Unlock()
	old := s.tpls.idx.Load()
	idx := &tplIndex{byHash: make(map[uint32]*tpl.Template, len(old.byHash)+len(ts)), order: slices.Clone(old.order)}
	for h, t := range old.byHash {
		idx.byHash[h] = t
	}
	n := 0
	for _, t := range ts {
		if t == nil || idx.byHash[t.Hash()] != nil {
			continue
		}
		if len(t.VOIs()) == 0 {
			return 0, fmt.Errorf("collector: template %q has no VOIs: %w", t.Name(), voi.ErrInvalid)
		}
		if o := sameMetricNames(idx.order, t); o != nil {
			return 0, fmt.Errorf("collector: template %q: its metrics would be named as those of template %q (%s_...): %w",
				t.Name(), o.Name(), export.Sanitize(t.Name()), voi.ErrInvalid)
		}
		idx.byHash[t.Hash()] = t
		idx.order = append(idx.order, t)
		n++
	}
	if n == 0 {
		return 0, nil
	}
	if len(idx.order) > s.cfg.MaxTemplates {
		s.hit("templates")
		return 0, fmt.Errorf("collector: %d templates known and %d new, at most %d (-max-templates): %w",
			len(old.order), n, s.cfg.MaxTemplates, ErrTooManyTemplates)
	}
	if persist && s.cfg.DataDir != "" {
		if err := writeTemplatesFile(filepath.Join(s.cfg.DataDir, "templates.json"), idx.order); err != nil {
			return 0, err
		}
	}
	idx.versions = versions.New(idx.order)
	s.tpls.idx.Store(idx)
	return n, nil
}

// writeTemplatesFile writes ts as a templates file, through a temporary
// file renamed into place and synced.
func writeTemplatesFile(path string, ts []*tpl.Template) error {
	p, err := json.Marshal(ts)
	if err != nil {
		return fmt.Errorf("collector: templates: %w", err)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("collector: templates: %w", err)
	}
	_, err = f.Write(append(p, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("collector: templates: %w", err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// loadDataDirTemplates adds the templates DataDir/templates.json holds,
// if any (before the log is replayed).
func (s *Server) loadDataDirTemplates() error {
	p, err := os.ReadFile(filepath.Join(s.cfg.DataDir, "templates.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("collector: -data-dir: %w", err)
	}
	ts, err := ParseTemplates(p)
	if err != nil {
		return fmt.Errorf("collector: -data-dir %s: templates.json: %w", s.cfg.DataDir, err)
	}
	_, err = s.addTemplates(ts, false)
	return err
}

// serveTemplates serves GET and POST /v1/templates.
func (s *Server) serveTemplates(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		ts := s.tpls.idx.Load().order
		if r.URL.Query().Get("wide") != "" {
			wide := make([]*tpl.Template, 0, len(ts))
			for _, t := range ts {
				wt, err := tpl.Widen(t)
				if err != nil {
					queryError(w, http.StatusInternalServerError, "template %q: %v", t.Name(), err)
					return
				}
				wide = append(wide, wt)
			}
			ts = wide
		}
		p, err := json.Marshal(ts)
		if err != nil {
			queryError(w, http.StatusInternalServerError, "%v", err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append(p, '\n'))
	case http.MethodPost:
		g, ok := s.templatesPoster(w, r)
		if !ok {
			return
		}
		body, rej := s.readBodyWithin(fromHTTP(r), MaxTemplatesBody, "MaxTemplatesBody", nil)
		if rej != nil {
			queryError(w, rej.status, "%s", rej.msg)
			return
		}
		ts, err := ParseTemplates(body)
		if err != nil {
			queryError(w, http.StatusBadRequest, "%v", err)
			return
		}
		if !s.admitTemplates(w, g, ts) {
			return
		}
		before := s.tpls.idx.Load().byHash
		if _, err := s.AddTemplates(ts); err != nil {
			status := http.StatusInternalServerError // the DataDir file
			switch {
			case errors.Is(err, ErrTooManyTemplates):
				status = http.StatusTooManyRequests
			case errors.Is(err, voi.ErrInvalid), errors.Is(err, voi.ErrExists):
				status = http.StatusBadRequest
			}
			queryError(w, status, "%v", err)
			return
		}
		type added struct {
			Name string `json:"name"`
			Hash uint32 `json:"hash"`
			New  bool   `json:"new"`
		}
		out := make([]added, len(ts))
		for i, t := range ts {
			out[i] = added{Name: t.Name(), Hash: t.Hash(), New: before[t.Hash()] == nil}
		}
		p, _ := json.Marshal(out)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append(p, '\n'))
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		queryError(w, http.StatusMethodNotAllowed, "method %s not allowed: GET or POST", r.Method)
	}
}

package collector

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Access control (Config.Tokens). Without tokens every client may post and
// read. With them, every post (POST /v1/blobs, /v1/batch, /v1/templates)
// needs "Authorization: Bearer TOKEN" of a post token: none or an unknown
// one is a 401 (reason auth, with WWW-Authenticate: Bearer); a blob of a
// template the token is not limited to, or a label whose value differs
// from one the token forces, is a 403 (reason auth), and a forced label
// the post does not give is added to it. If any token may read, GET
// /metrics, /v1/aggregates, /v1/aggregate, /v1/templates and
// /v1/definition need a read token too (401 otherwise); /healthz and
// /readyz stay open. A POST /v1/definition needs a post token allowed to
// post the template that forces no labels (definition.go). Tokens are
// compared in constant time.

// Token is one bearer token of a tokens file (ParseTokens).
type Token struct {
	// Token is the secret, 16 to 256 printable ASCII bytes without spaces.
	Token string `json:"token"`
	// Post lets it post (the default when neither Post nor Read is set).
	Post bool `json:"post,omitempty"`
	// Read lets it read /metrics and the query API.
	Read bool `json:"read,omitempty"`
	// Templates limits its posts to templates of these names (empty: any).
	Templates []string `json:"templates,omitempty"`
	// Labels are forced on its posts: added when missing, refused when
	// given with another value.
	Labels map[string]string `json:"labels,omitempty"`
}

// MaxTokens bounds the tokens of a tokens file.
const MaxTokens = 10000

// ParseTokens reads a tokens file: a JSON array of Token objects, e.g.
//
//	[{"token": "9f8e...", "templates": ["TCP_DEFAULT"], "labels": {"svc": "api"}},
//	 {"token": "c0ff...", "read": true}]
//
// Errors wrap voi.ErrInvalid: not such an array (unknown members
// included), a token too short, too long or not printable ASCII, one given
// twice, an empty template name, a forced label that is not a valid label
// (export.CheckLabels), more than MaxTokens.
func ParseTokens(data []byte) ([]Token, error) {
	var ts []Token
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ts); err != nil {
		return nil, fmt.Errorf("collector: tokens: %v: %w", err, voi.ErrInvalid)
	}
	if dec.More() {
		return nil, fmt.Errorf("collector: tokens: data after the array: %w", voi.ErrInvalid)
	}
	if len(ts) > MaxTokens {
		return nil, fmt.Errorf("collector: tokens: %d, at most %d: %w", len(ts), MaxTokens, voi.ErrInvalid)
	}
	seen := map[string]bool{}
	for i := range ts {
		t := &ts[i]
		if len(t.Token) < 16 || len(t.Token) > 256 {
			return nil, fmt.Errorf("collector: token %d: %d bytes, want 16 to 256: %w", i, len(t.Token), voi.ErrInvalid)
		}
		for j := 0; j < len(t.Token); j++ {
			if c := t.Token[j]; c <= ' ' || c > '~' {
				return nil, fmt.Errorf("collector: token %d: byte %d is not printable ASCII: %w", i, j, voi.ErrInvalid)
			}
		}
		if seen[t.Token] {
			return nil, fmt.Errorf("collector: token %d: given twice: %w", i, voi.ErrInvalid)
		}
		seen[t.Token] = true
		if !t.Post && !t.Read {
			t.Post = true
		}
		for _, n := range t.Templates {
			if n == "" {
				return nil, fmt.Errorf("collector: token %d: an empty template name: %w", i, voi.ErrInvalid)
			}
		}
		if err := export.CheckPostedLabels(sortedLabels(t.Labels)); err != nil {
			return nil, fmt.Errorf("collector: token %d: forced labels: %w", i, err)
		}
	}
	return ts, nil
}

func sortedLabels(m map[string]string) []export.Label {
	ls := make([]export.Label, 0, len(m))
	for n, v := range m {
		ls = append(ls, export.Label{Name: n, Value: v})
	}
	slices.SortFunc(ls, func(a, b export.Label) int { return strings.Compare(a.Name, b.Name) })
	return ls
}

// grant is a token as the server checks it.
type grant struct {
	secret    []byte
	post      bool
	read      bool
	templates map[string]bool // nil: any
	labels    []export.Label  // forced, sorted
}

// acl is the server's tokens, by the SHA-256 of the secret.
type acl struct {
	grants   map[[32]byte]*grant
	readable bool // a token may read: reading needs one
}

func newACL(ts []Token) (*acl, error) {
	if ts == nil {
		return nil, nil
	}
	a := &acl{grants: map[[32]byte]*grant{}}
	for i, t := range ts {
		if len(t.Token) < 16 {
			return nil, fmt.Errorf("collector: token %d: shorter than 16 bytes: %w", i, voi.ErrInvalid)
		}
		g := &grant{secret: []byte(t.Token), post: t.Post || !t.Read, read: t.Read, labels: sortedLabels(t.Labels)}
		if len(t.Templates) > 0 {
			g.templates = map[string]bool{}
			for _, n := range t.Templates {
				g.templates[n] = true
			}
		}
		a.grants[sha256.Sum256(g.secret)] = g
		a.readable = a.readable || g.read
	}
	return a, nil
}

// find returns the grant of the bearer token of h, an Authorization
// header, or nil.
func (a *acl) find(h string) *grant {
	const prefix = "Bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return nil
	}
	tok := []byte(strings.TrimSpace(h[len(prefix):]))
	g := a.grants[sha256.Sum256(tok)]
	if g == nil || subtle.ConstantTimeCompare(g.secret, tok) != 1 {
		return nil
	}
	return g
}

// poster returns the grant of a post whose Authorization header is auth,
// nil without access control, or the 401.
func (s *Server) poster(auth string) (*grant, *rejection) {
	if s.acl == nil {
		return nil, nil
	}
	if g := s.acl.find(auth); g != nil && g.post {
		return g, nil
	}
	rej := reject(http.StatusUnauthorized, "auth", "a post token is required (Authorization: Bearer TOKEN; -tokens)")
	rej.authenticate = true
	return nil, rej
}

// admit checks a blob of template t with labels (sorted) against g and
// returns the labels with g's forced ones; a nil g admits everything.
func (g *grant) admit(t *tpl.Template, labels []export.Label) ([]export.Label, *rejection) {
	if g == nil {
		return labels, nil
	}
	if g.templates != nil && !g.templates[t.Name()] {
		return nil, reject(http.StatusForbidden, "auth", "this token may not post template %.40q (-tokens)", t.Name())
	}
	if len(g.labels) == 0 {
		return labels, nil
	}
	out := labels
	copied := false
	for _, f := range g.labels {
		i, ok := slices.BinarySearchFunc(out, f.Name, func(l export.Label, n string) int { return strings.Compare(l.Name, n) })
		if ok {
			if out[i].Value != f.Value {
				return nil, reject(http.StatusForbidden, "auth", "label %.40q is %.40q for this token (-tokens)", f.Name, f.Value)
			}
			continue
		}
		if !copied {
			out, copied = slices.Clone(labels), true
		}
		out = slices.Insert(out, i, f)
	}
	return out, nil
}

// readGuarded reports whether r reads what a read token guards.
func readGuarded(r *http.Request) bool {
	switch r.URL.Path {
	case "/metrics", "/v1/aggregates", "/v1/aggregate":
		return true
	case "/v1/templates":
		return r.Method != http.MethodPost
	case "/v1/definition": // a POST or PUT needs a post token (definition.go)
		return r.Method != http.MethodPost && r.Method != http.MethodPut
	}
	return false
}

// authorizeRead answers 401 and returns false if r needs a read token it
// does not carry.
func (s *Server) authorizeRead(w http.ResponseWriter, r *http.Request) bool {
	if s.acl == nil || !s.acl.readable || !readGuarded(r) {
		return true
	}
	if g := s.acl.find(r.Header.Get("Authorization")); g != nil && g.read {
		return true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="statsblob-collector"`)
	queryError(w, http.StatusUnauthorized, "a read token is required (Authorization: Bearer TOKEN; -tokens)")
	return false
}

// templatesPoster checks a POST /v1/templates's post token before its
// body is read: it answers the refusal and returns false without one.
func (s *Server) templatesPoster(w http.ResponseWriter, r *http.Request) (*grant, bool) {
	g, rej := s.poster(r.Header.Get("Authorization"))
	if rej != nil {
		s.refuse(w, rej)
		return nil, false
	}
	return g, true
}

// admitTemplates checks that g's templates (if limited) include every
// uploaded name; it answers the refusal and returns false otherwise.
func (s *Server) admitTemplates(w http.ResponseWriter, g *grant, ts []*tpl.Template) bool {
	for _, t := range ts {
		if _, rej := g.admit(t, nil); rej != nil {
			s.refuse(w, rej)
			return false
		}
	}
	return true
}

// refuse counts and answers a refused templates request.
func (s *Server) refuse(w http.ResponseWriter, rej *rejection) {
	s.rejected.WithLabelValues(rej.reason).Inc()
	if rej.authenticate {
		w.Header().Set("WWW-Authenticate", `Bearer realm="statsblob-collector"`)
	}
	queryError(w, rej.status, "%s", rej.msg)
}

package tpl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// The template JSON form lets a collector register the templates of the
// hosts that send it blobs, so it can render them with names. It is
// versioned and strict:
//
//	{
//	  "format": "statsblob-template", "version": 1,
//	  "name": "CONN", "hash": 2299641531,
//	  "vois": [                                  // in the order they were added
//	    {"id": 0, "name": "txbytes", "dtype": "INT_U64", "stats": [{"type": "SUM"}]},
//	    {"id": 1, "name": "rtt", "dtype": "INT_U32", "relupdate": true,
//	     "stats": [
//	       {"type": "MAX"},
//	       {"type": "HIST", "hist": {"dtype": "CRHIST32", "scheme": "LIN",
//	         "lb": 0, "ub": 1000, "stepinc": 50, "flags": 2}},
//	       {"type": "TDGST", "tdigest": {"dtype": "TDGSTCLUST32", "nctds": 20, "prec": 4}}]},
//	    {"id": 2, "name": "ratio", "dtype": "Q_S64", "prec": 16, "stats": [{"type": "SUM"}]}
//	  ]
//	}
//
// Numbers are the uint64 patterns the C uses (bounds of negative or Q
// values are two's-complement or raw Q bits). Only the members that apply
// to a statistic's type and scheme may appear. Reading a template rebuilds
// it through AddVOI and checks that the result has the recorded hash.
// A t-digest's "mode" ("c", the default when absent, or "accurate"; see
// TDigestSpec.Mode) is not part of the hash.

// JSONFormat and JSONVersion identify the template JSON form.
const (
	JSONFormat  = "statsblob-template"
	JSONVersion = 1
)

// Limits of the template JSON form. ReadJSON checks the document's size
// and, in one pass that allocates nothing, the length of every list and
// the nesting depth before it decodes anything; no template exceeds them.
const (
	// MaxJSONSize is the largest document ReadJSON reads, in bytes (4 MiB;
	// the form of the largest template is under 1 MiB).
	MaxJSONSize = 4 << 20
	// MaxJSONVOIs is the most VOIs a template can hold: each takes at least
	// 28 bytes of a blob's 65,535 (a voi[] entry, two voistat[] entries, a
	// 4-byte statistic) after the 32-byte header.
	MaxJSONVOIs = (abi.MaxBlobSz - abi.HeaderSize) / 28
	// MaxJSONStats is the most statistics a VOI can keep: one of each type
	// (SUM, MAX, MIN, HIST, TDGST).
	MaxJSONStats = 5
	// MaxJSONBuckets is the most buckets the USR histograms of a template
	// can have together: each takes at least 16 bytes, after the blob
	// header, a voi[] entry, five voistat[] entries and a histogram's
	// 8-byte header.
	MaxJSONBuckets = (abi.MaxBlobSz - abi.HeaderSize - abi.VOISize - 5*abi.StatSize - 8) / 16
	// MaxJSONDepth is the deepest nesting of arrays and objects (a
	// bucket's bounds are nine levels down).
	MaxJSONDepth = 10
)

// maxJSONElements bounds the elements of all the lists of a document
// together: VOIs, their statistics, buckets and the two bounds of each.
const maxJSONElements = MaxJSONVOIs*(1+MaxJSONStats) + 3*MaxJSONBuckets

type jsonTemplate struct {
	Format  string    `json:"format"`
	Version int       `json:"version"`
	Name    string    `json:"name"`
	Hash    uint32    `json:"hash"`
	VOIs    []jsonVOI `json:"vois"`
}

// scanJSON checks, without decoding or allocating, that no array of the
// document b (well formed or not) has more than limit elements, that all
// of them together have at most maxJSONElements, and that nothing nests
// deeper than MaxJSONDepth, so that decoding what passes allocates in
// proportion to what a template can hold. It returns a description of the
// first excess, or "".
func scanJSON(b []byte, limit int) string {
	var count [MaxJSONDepth + 1]int  // elements of the open array at each depth
	var array [MaxJSONDepth + 1]bool // whether the container at each depth is an array
	depth, total := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case ']', '}':
			if depth > 0 {
				depth--
			}
			continue
		case ',':
			continue
		}
		// A value (or an object key) starts here: an element if it is
		// directly inside an array.
		if depth > 0 && array[depth] {
			if count[depth]++; count[depth] > limit {
				return fmt.Sprintf("a list of more than %d elements (no template has one)", limit)
			}
			if total++; total > maxJSONElements {
				return fmt.Sprintf("lists of more than %d elements together (no template has as many)", maxJSONElements)
			}
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			if depth == MaxJSONDepth {
				return fmt.Sprintf("nesting deeper than %d levels (no template nests deeper)", MaxJSONDepth)
			}
			depth++
			count[depth], array[depth] = 0, c == '['
		default:
			// A number or literal: skip the rest of it.
		}
	}
	return ""
}

type jsonVOI struct {
	ID        int32      `json:"id"`
	Name      string     `json:"name"`
	DType     string     `json:"dtype"`
	Prec      int        `json:"prec,omitempty"`
	RelUpdate bool       `json:"relupdate,omitempty"`
	Stats     []jsonStat `json:"stats"`
}

type jsonStat struct {
	Type    string       `json:"type"`
	Hist    *jsonHist    `json:"hist,omitempty"`
	TDigest *jsonTDigest `json:"tdigest,omitempty"`
}

type jsonHist struct {
	DType      string      `json:"dtype"`
	Scheme     string      `json:"scheme"`
	Flags      uint32      `json:"flags,omitempty"`
	LB         *uint64     `json:"lb,omitempty"`
	UB         *uint64     `json:"ub,omitempty"`
	StepInc    *uint64     `json:"stepinc,omitempty"`
	StepBase   *uint64     `json:"stepbase,omitempty"`
	StepExp    *uint64     `json:"stepexp,omitempty"`
	LinStepDiv *uint64     `json:"linstepdiv,omitempty"`
	Buckets    [][2]uint64 `json:"buckets,omitempty"`
}

type jsonTDigest struct {
	DType string `json:"dtype"`
	NCtds uint32 `json:"nctds"`
	Prec  uint32 `json:"prec"`
	Mode  string `json:"mode,omitempty"` // tdigest.Mode's name; "" (absent) is "c"
}

var schemeNames = map[hist.Scheme]string{hist.Lin: "LIN", hist.Exp: "EXP", hist.LinExp: "LINEXP", hist.Usr: "USR"}

func u64p(v uint64) *uint64 { return &v }

// MarshalJSON returns the template's JSON form.
func (t *Template) MarshalJSON() ([]byte, error) {
	t.mu.RLock()
	jt := jsonTemplate{Format: JSONFormat, Version: JSONVersion, Name: t.name, Hash: t.hash, VOIs: make([]jsonVOI, 0, len(t.defs))}
	defs := t.defs
	t.mu.RUnlock()
	for _, d := range defs {
		jv := jsonVOI{ID: d.ID, Name: d.Name, DType: d.DType.String(), RelUpdate: d.Flags&voi.FlagRelUpdate != 0, Stats: make([]jsonStat, 0, len(d.Stats))}
		if d.DType.IsQ() {
			jv.Prec = d.Prec
		}
		for _, s := range d.Stats {
			js := jsonStat{Type: s.Type.String()}
			switch s.Type {
			case voi.Hist:
				h := s.Hist
				jh := &jsonHist{DType: h.DType.String(), Scheme: schemeNames[h.Scheme], Flags: uint32(h.Flags)}
				switch h.Scheme {
				case hist.Lin:
					jh.LB, jh.UB, jh.StepInc = u64p(h.LB), u64p(h.UB), u64p(h.StepInc)
				case hist.Exp:
					jh.LB, jh.UB, jh.StepBase, jh.StepExp = u64p(h.LB), u64p(h.UB), u64p(h.StepBase), u64p(h.StepExp)
				case hist.LinExp:
					jh.LB, jh.UB, jh.StepBase, jh.LinStepDiv = u64p(h.LB), u64p(h.UB), u64p(h.StepBase), u64p(h.LinStepDiv)
				case hist.Usr:
					jh.Buckets = make([][2]uint64, len(h.Buckets))
					for i, b := range h.Buckets {
						jh.Buckets[i] = [2]uint64{b.LB, b.UB}
					}
				}
				js.Hist = jh
			case voi.TDgst:
				js.TDigest = &jsonTDigest{DType: s.TDigest.DType.String(), NCtds: s.TDigest.NCtds, Prec: s.TDigest.Prec}
				if s.TDigest.Mode != tdigest.C {
					js.TDigest.Mode = s.TDigest.Mode.String()
				}
			}
			jv.Stats = append(jv.Stats, js)
		}
		jt.VOIs = append(jt.VOIs, jv)
	}
	return json.Marshal(jt)
}

// ReadJSONList reads a templates file: one template's JSON form (what
// json.Marshal of a *Template writes) or a JSON array of them (what
// `statsblob demo` writes), registering each in r with ReadJSON and
// returning them in order. Errors wrap voi.ErrInvalid for a document that
// is neither; a template's own error (ReadJSON's) is wrapped with its
// index. The templates before a failing one stay registered.
func ReadJSONList(r *Registry, data []byte) ([]*Template, error) {
	var list []json.RawMessage
	switch t := bytes.TrimLeft(data, " \t\r\n"); {
	case len(t) > 0 && t[0] == '{':
		list = []json.RawMessage{data}
	case len(t) > 0 && t[0] == '[':
		if err := json.Unmarshal(data, &list); err != nil {
			return nil, fmt.Errorf("%v: %w", err, voi.ErrInvalid)
		}
	default:
		return nil, fmt.Errorf("neither a template (JSON object) nor an array of templates: %w", voi.ErrInvalid)
	}
	out := make([]*Template, 0, len(list))
	for i, raw := range list {
		t, err := ReadJSON(r, raw)
		if err != nil {
			return nil, fmt.Errorf("template %d: %w", i, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// ReadJSON decodes a template's JSON form and registers the template in r,
// returning it (a nil r fails: it cannot grow). If r already holds a template of that
// name and hash, that template is returned. Errors wrap voi.ErrTooBig for a
// document over MaxJSONSize bytes or a list over its limit (MaxJSONVOIs,
// MaxJSONStats, MaxJSONBuckets), found before the list is decoded;
// voi.ErrInvalid for malformed input (unknown members, wrong format or
// version, bad names or numbers, trailing data) or a rebuilt template whose
// hash differs from the recorded one; and voi.ErrExists for a registered
// template of the same name and another hash. r is unchanged on error.
func ReadJSON(r *Registry, data []byte) (*Template, error) {
	if r == nil {
		return nil, fmt.Errorf("tpl: template JSON: nil registry: %w", voi.ErrInvalid)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("tpl: template JSON: "+format+": %w", append(args, voi.ErrInvalid)...)
	}
	if len(data) > MaxJSONSize {
		return nil, fmt.Errorf("tpl: template JSON of %d bytes exceeds %d: %w", len(data), MaxJSONSize, voi.ErrTooBig)
	}
	tooBig := func(format string, args ...any) error {
		return fmt.Errorf("tpl: template JSON: "+format+": %w", append(args, voi.ErrTooBig)...)
	}
	if excess := scanJSON(data, max(MaxJSONVOIs, MaxJSONBuckets)); excess != "" {
		return nil, tooBig("%s", excess)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var jt jsonTemplate
	if err := dec.Decode(&jt); err != nil {
		return nil, bad("%v", err)
	}
	if len(jt.VOIs) > MaxJSONVOIs {
		return nil, tooBig("%d VOIs, more than the %d a template can hold", len(jt.VOIs), MaxJSONVOIs)
	}
	buckets := 0
	for _, jv := range jt.VOIs {
		if len(jv.Stats) > MaxJSONStats {
			return nil, tooBig("VOI %d: %d statistics, more than the %d a VOI can keep", jv.ID, len(jv.Stats), MaxJSONStats)
		}
		for _, js := range jv.Stats {
			if js.Hist != nil {
				buckets += len(js.Hist.Buckets)
			}
		}
	}
	if buckets > MaxJSONBuckets {
		return nil, tooBig("%d histogram buckets, more than the %d a template can hold", buckets, MaxJSONBuckets)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, bad("data after the template")
	}
	if jt.Format != JSONFormat || jt.Version != JSONVersion {
		return nil, bad("format %q version %d, want %q version %d", jt.Format, jt.Version, JSONFormat, JSONVersion)
	}
	defs := make([]VOIDef, 0, len(jt.VOIs))
	for _, jv := range jt.VOIs {
		d, err := jv.def()
		if err != nil {
			return nil, bad("VOI %d: %v", jv.ID, err)
		}
		defs = append(defs, d)
	}

	// Build in a scratch registry first, so r changes only on success.
	scratch := NewRegistry()
	t, err := scratch.New(jt.Name)
	if err != nil {
		return nil, fmt.Errorf("tpl: template JSON: %w", err)
	}
	if err := t.addVOIs(defs); err != nil {
		return nil, fmt.Errorf("tpl: template JSON: %w", err)
	}
	if t.Hash() != jt.Hash {
		return nil, bad("template %q rebuilds with hash %d, not %d", jt.Name, t.Hash(), jt.Hash)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if id := r.lookupLocked(jt.Name, true, 0); id >= 0 {
		if ex := r.tpls[id]; ex.Hash() == jt.Hash {
			return ex, nil
		}
		return nil, fmt.Errorf("tpl: template JSON: %q is registered with another hash: %w", jt.Name, voi.ErrExists)
	}
	t.reg, t.id = r, len(r.tpls)
	r.tpls = append(r.tpls, t)
	return t, nil
}

func (jv jsonVOI) def() (VOIDef, error) {
	dt, ok := voi.ParseDType(jv.DType)
	if !ok || !dt.IsNumeric() || strings.ToUpper(jv.DType) != jv.DType {
		return VOIDef{}, fmt.Errorf("dtype %q", jv.DType)
	}
	d := VOIDef{ID: jv.ID, Name: jv.Name, DType: dt, Prec: jv.Prec}
	if jv.RelUpdate {
		d.Flags = voi.FlagRelUpdate
	}
	if len(jv.Stats) == 0 {
		return d, errors.New("no statistics")
	}
	for _, js := range jv.Stats {
		st, ok := voi.ParseSType(js.Type)
		if !ok || st == voi.StatVoiState || strings.ToUpper(js.Type) != js.Type {
			return d, fmt.Errorf("statistic type %q", js.Type)
		}
		spec := StatSpec{Type: st}
		switch {
		case st == voi.Hist && js.Hist != nil && js.TDigest == nil:
			h, err := js.Hist.spec()
			if err != nil {
				return d, err
			}
			spec.Hist = h
		case st == voi.TDgst && js.TDigest != nil && js.Hist == nil:
			tdt, ok := voi.ParseDType(js.TDigest.DType)
			if !ok || !tdt.IsTDigest() {
				return d, fmt.Errorf("t-digest dtype %q", js.TDigest.DType)
			}
			mode, err := tdigest.ParseMode(js.TDigest.Mode)
			if err != nil {
				return d, fmt.Errorf("t-digest mode %q (valid: c, accurate)", js.TDigest.Mode)
			}
			spec.TDigest = TDigestSpec{DType: tdt, NCtds: js.TDigest.NCtds, Prec: js.TDigest.Prec, Mode: mode}
		case st <= voi.Min && js.Hist == nil && js.TDigest == nil:
		default:
			return d, fmt.Errorf("%s statistic with members of another type", js.Type)
		}
		d.Stats = append(d.Stats, spec)
	}
	return d, nil
}

func (jh *jsonHist) spec() (hist.Spec, error) {
	dt, ok := voi.ParseDType(jh.DType)
	if !ok || !dt.IsHist() {
		return hist.Spec{}, fmt.Errorf("histogram dtype %q", jh.DType)
	}
	s := hist.Spec{DType: dt, Flags: hist.Flags(jh.Flags)}
	found := false
	for sc, n := range schemeNames {
		if n == jh.Scheme {
			s.Scheme, found = sc, true
		}
	}
	if !found {
		return s, fmt.Errorf("histogram scheme %q", jh.Scheme)
	}
	// Each scheme takes exactly its own members.
	have := func(ps ...*uint64) bool {
		for _, p := range ps {
			if p == nil {
				return false
			}
		}
		return true
	}
	none := func(ps ...*uint64) bool {
		for _, p := range ps {
			if p != nil {
				return false
			}
		}
		return true
	}
	ok = false
	switch s.Scheme {
	case hist.Lin:
		ok = have(jh.LB, jh.UB, jh.StepInc) && none(jh.StepBase, jh.StepExp, jh.LinStepDiv) && jh.Buckets == nil
		if ok {
			s.LB, s.UB, s.StepInc = *jh.LB, *jh.UB, *jh.StepInc
		}
	case hist.Exp:
		ok = have(jh.LB, jh.UB, jh.StepBase, jh.StepExp) && none(jh.StepInc, jh.LinStepDiv) && jh.Buckets == nil
		if ok {
			s.LB, s.UB, s.StepBase, s.StepExp = *jh.LB, *jh.UB, *jh.StepBase, *jh.StepExp
		}
	case hist.LinExp:
		ok = have(jh.LB, jh.UB, jh.StepBase, jh.LinStepDiv) && none(jh.StepInc, jh.StepExp) && jh.Buckets == nil
		if ok {
			s.LB, s.UB, s.StepBase, s.LinStepDiv = *jh.LB, *jh.UB, *jh.StepBase, *jh.LinStepDiv
		}
	case hist.Usr:
		ok = none(jh.LB, jh.UB, jh.StepInc, jh.StepBase, jh.StepExp, jh.LinStepDiv) && len(jh.Buckets) > 0
		s.Buckets = make([]hist.Bound, 0, len(jh.Buckets))
		for _, b := range jh.Buckets {
			s.Buckets = append(s.Buckets, hist.Bound{LB: b[0], UB: b[1]})
		}
	}
	if !ok {
		return s, fmt.Errorf("histogram members do not match scheme %s", jh.Scheme)
	}
	return s, nil
}

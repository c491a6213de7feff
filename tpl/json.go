package tpl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// The template JSON form lets a collector register the templates of the
// hosts that send it blobs, so it can render them with names. It is
// versioned and strict; README.md ("Templates as JSON") documents it and
// testdata/template.schema.json is its JSON Schema:
//
//	{
//	  "format": "statsblob-template", "version": 2,
//	  "name": "CONN", "hash": 2299641531,
//	  "vois": [                                  // in the order they were added
//	    {"id": 0, "name": "txbytes", "dtype": "INT_U64", "stats": [{"type": "SUM"}]},
//	    {"id": 1, "name": "rtt", "dtype": "INT_S32", "relupdate": true,
//	     "stats": [
//	       {"type": "MAX"},
//	       {"type": "HIST", "hist": {"dtype": "CRHIST32", "scheme": "LIN",
//	         "lb": -100, "ub": 1000, "stepinc": 50, "flags": ["UBOUND_INF"]}},
//	       {"type": "TDGST", "tdigest": {"dtype": "TDGSTCLUST32", "nctds": 20, "prec": 4}}]},
//	    {"id": 2, "name": "ratio", "dtype": "Q_S64", "prec": 16, "stats": [{"type": "SUM"}]}
//	  ]
//	}
//
// In version 2 a histogram's bounds ("lb", "ub", "buckets") are values of
// the VOI's type: integers in its range (negative for a signed VOI), and
// numbers for a Q VOI, rounded to the VOI's "prec". Steps are whole
// numbers. Histogram "flags" are names ("LBOUND_INF", "UBOUND_INF") or,
// as in version 1, the number of the VSD_HIST_* bits. Version 1, which
// ReadJSON still reads, wrote bounds as the C's uint64 patterns (-100 as
// 18446744073709551516, Q values as raw bits); MarshalJSON writes it only
// for a template whose bounds are patterns no value gives (hand-made bits,
// e.g. a 32-bit bound whose high half is not the low half's extension).
// Only the members that apply to a statistic's type and scheme may appear.
// Reading a template rebuilds it through AddVOI and checks that the result
// has the recorded hash.
// A t-digest's "mode" ("c", the default when absent, or "accurate"; see
// TDigestSpec.Mode) is not part of the hash.

// JSONFormat and JSONVersion identify the template JSON form;
// JSONVersionPatterns is the earlier version, whose histogram bounds are
// the C's uint64 patterns.
const (
	JSONFormat          = "statsblob-template"
	JSONVersion         = 2
	JSONVersionPatterns = 1
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
	// MaxJSONStats is the most statistics a VOI's definition can list. A
	// VOI keeps one of each type (SUM, MAX, MIN, HIST, TDGST), but a
	// definition may repeat a type, as the C allows (AddVOI: the later
	// statistic takes the slot, the earlier one's data stays in the blob);
	// each takes at least 4 bytes of data.
	MaxJSONStats = (abi.MaxBlobSz - abi.HeaderSize - abi.VOISize - 5*abi.StatSize) / 4
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
// together: VOIs, their statistics (no more in all VOIs than in one),
// buckets and the two bounds of each.
const maxJSONElements = MaxJSONVOIs + MaxJSONStats + 3*MaxJSONBuckets

type jsonTemplate struct {
	Format  string    `json:"format"`
	Version int       `json:"version"`
	Name    string    `json:"name"`
	Hash    *uint32   `json:"hash,omitempty"`
	VOIs    []jsonVOI `json:"vois"`
	jsonTemplateMeta
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
	jsonVOIMeta
}

type jsonStat struct {
	Type    string       `json:"type"`
	Hist    *jsonHist    `json:"hist,omitempty"`
	TDigest *jsonTDigest `json:"tdigest,omitempty"`
}

type jsonHist struct {
	DType      string       `json:"dtype"`
	Scheme     string       `json:"scheme"`
	Flags      *jsonFlags   `json:"flags,omitempty"`
	LB         *jsonNum     `json:"lb,omitempty"`
	UB         *jsonNum     `json:"ub,omitempty"`
	StepInc    *uint64      `json:"stepinc,omitempty"`
	StepBase   *uint64      `json:"stepbase,omitempty"`
	StepExp    *uint64      `json:"stepexp,omitempty"`
	LinStepDiv *uint64      `json:"linstepdiv,omitempty"`
	Buckets    [][2]jsonNum `json:"buckets,omitempty"`
}

// jsonNum is a JSON number kept as written, read as a value of the VOI's
// type (version 2) or a uint64 pattern (version 1).
type jsonNum string

func (n *jsonNum) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '-' && (b[0] < '0' || b[0] > '9') {
		return fmt.Errorf("bound %s is not a number", b)
	}
	*n = jsonNum(b)
	return nil
}

func (n jsonNum) MarshalJSON() ([]byte, error) { return []byte(n), nil }

// jsonFlags are a histogram's flags: by name, or as the number of their
// bits (version 1's form, also read in version 2).
type jsonFlags struct {
	v     hist.Flags
	names bool
}

var histFlagNames = []struct {
	f    hist.Flags
	name string
}{{hist.LBoundInf, "LBOUND_INF"}, {hist.UBoundInf, "UBOUND_INF"}}

func (f *jsonFlags) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '[' {
		var names []string
		if err := json.Unmarshal(b, &names); err != nil {
			return err
		}
	next:
		for _, n := range names {
			for _, fn := range histFlagNames {
				if n == fn.name {
					f.v |= fn.f
					continue next
				}
			}
			return fmt.Errorf("histogram flag %q (valid: LBOUND_INF, UBOUND_INF)", n)
		}
		f.names = true
		return nil
	}
	var v uint32
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("histogram flags %s: neither names nor a number", b)
	}
	f.v = hist.Flags(v)
	return nil
}

func (f jsonFlags) MarshalJSON() ([]byte, error) {
	names := []string{}
	rest := f.v
	for _, fn := range histFlagNames {
		if rest&fn.f != 0 {
			names, rest = append(names, fn.name), rest&^fn.f
		}
	}
	if !f.names || rest != 0 {
		return json.Marshal(uint32(f.v))
	}
	return json.Marshal(names)
}

type jsonTDigest struct {
	DType string `json:"dtype"`
	NCtds uint32 `json:"nctds"`
	Prec  uint32 `json:"prec"`
	Mode  string `json:"mode,omitempty"` // tdigest.Mode's name; "" (absent) is "c"
}

var schemeNames = map[hist.Scheme]string{hist.Lin: "LIN", hist.Exp: "EXP", hist.LinExp: "LINEXP", hist.Usr: "USR"}

// schemeMembers names the members each scheme takes, for error messages.
var schemeMembers = map[hist.Scheme]string{
	hist.Lin:    "lb, ub, stepinc",
	hist.Exp:    "lb, ub, stepbase, stepexp",
	hist.LinExp: "lb, ub, stepbase, linstepdiv",
	hist.Usr:    "buckets",
}

// DTypeNames returns the names of the data types that pred accepts, in
// the order of their numbers, for messages that list the valid names.
func dtypeNames(pred func(voi.DType) bool) []string {
	var out []string
	for dt := voi.DType(0); dt < voi.NumDTypes; dt++ {
		if pred(dt) {
			out = append(out, dt.String())
		}
	}
	return out
}

func histDTypeNames() []string { return dtypeNames(voi.DType.IsHist) }

func u64p(v uint64) *uint64 { return &v }

// MarshalJSON returns the template's JSON form: version 2 (bounds as
// values of the VOIs' types), or version 1 (bounds as the C's patterns)
// for a template with a bound no value gives.
func (t *Template) MarshalJSON() ([]byte, error) {
	t.mu.RLock()
	name, hash, defs := t.name, t.hash, t.defs
	meta := t.metaLocked()
	t.mu.RUnlock()
	jt, ok := jsonOf(name, hash, defs, JSONVersion)
	if !ok {
		jt, _ = jsonOf(name, hash, defs, JSONVersionPatterns)
	}
	putJSONMeta(&jt, meta)
	return json.Marshal(jt)
}

// jsonOf returns the JSON form of version v of a template, and false if
// version 2 cannot hold one of its bounds.
func jsonOf(name string, hash uint32, defs []VOIDef, v int) (jsonTemplate, bool) {
	jt := jsonTemplate{Format: JSONFormat, Version: v, Name: name, Hash: &hash, VOIs: make([]jsonVOI, 0, len(defs))}
	ok := true
	bound := func(p uint64, d VOIDef) jsonNum {
		if v == JSONVersionPatterns {
			return jsonNum(strconv.FormatUint(p, 10))
		}
		n, exact := numFromPattern(p, d.DType, d.Prec)
		ok = ok && exact
		return jsonNum(n.String())
	}
	boundp := func(p uint64, d VOIDef) *jsonNum { n := bound(p, d); return &n }
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
				jh := &jsonHist{DType: h.DType.String(), Scheme: schemeNames[h.Scheme]}
				if h.Flags != 0 {
					jh.Flags = &jsonFlags{v: h.Flags, names: v != JSONVersionPatterns}
				}
				switch h.Scheme {
				case hist.Lin:
					jh.LB, jh.UB, jh.StepInc = boundp(h.LB, d), boundp(h.UB, d), u64p(h.StepInc)
				case hist.Exp:
					jh.LB, jh.UB, jh.StepBase, jh.StepExp = boundp(h.LB, d), boundp(h.UB, d), u64p(h.StepBase), u64p(h.StepExp)
				case hist.LinExp:
					jh.LB, jh.UB, jh.StepBase, jh.LinStepDiv = boundp(h.LB, d), boundp(h.UB, d), u64p(h.StepBase), u64p(h.LinStepDiv)
				case hist.Usr:
					jh.Buckets = make([][2]jsonNum, len(h.Buckets))
					for i, b := range h.Buckets {
						jh.Buckets[i] = [2]jsonNum{bound(b.LB, d), bound(b.UB, d)}
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
	return jt, ok
}

// ReadJSONList reads a templates file (see SplitJSONList), registering
// each template in r with ReadJSON and returning them in order; with r nil,
// each in a registry of its own, so that versions of one template name
// may be side by side (what a collector's templates file holds). Errors
// wrap voi.ErrInvalid for a document that is neither a template nor an
// array of them; a template's own error (ReadJSON's) is returned as it is
// for a file of one template, and wrapped with its index ("template 2: ")
// for an array. The templates before a failing one stay registered.
func ReadJSONList(r *Registry, data []byte) ([]*Template, error) {
	list, err := SplitJSONList(data)
	if err != nil {
		return nil, err
	}
	array := isJSONArray(data)
	out := make([]*Template, 0, len(list))
	for i, raw := range list {
		reg := r
		if reg == nil {
			reg = NewRegistry()
		}
		t, err := ReadJSON(reg, raw)
		if err != nil {
			if !array {
				return nil, err
			}
			return nil, fmt.Errorf("template %d: %w", i, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// SplitJSONList splits a templates file into its templates' JSON forms,
// for ReadJSON: the file is one template's JSON form (what json.Marshal of
// a *Template writes) or a JSON array of them (what `statsblob demo`
// writes). It checks only that shape; ReadJSON checks each template.
// Errors wrap voi.ErrInvalid.
func SplitJSONList(data []byte) ([]json.RawMessage, error) {
	switch t := bytes.TrimLeft(data, " \t\r\n"); {
	case len(t) > 0 && t[0] == '{':
		return []json.RawMessage{data}, nil
	case isJSONArray(data):
		var list []json.RawMessage
		if err := json.Unmarshal(data, &list); err != nil {
			return nil, fmt.Errorf("%v: %w", err, voi.ErrInvalid)
		}
		return list, nil
	}
	return nil, fmt.Errorf("neither a template (JSON object) nor an array of templates: %w", voi.ErrInvalid)
}

// isJSONArray reports whether data, past JSON's white space, starts an
// array: a templates file of several templates, not one.
func isJSONArray(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && t[0] == '['
}

// ReadJSON decodes a template's JSON form and registers the template in r,
// returning it (a nil r fails: it cannot grow). If r already holds a template of that
// name and hash, that template is returned. Errors wrap voi.ErrTooBig for a
// document over MaxJSONSize bytes or a list over its limit (MaxJSONVOIs,
// MaxJSONStats, MaxJSONBuckets), found before the list is decoded;
// voi.ErrInvalid for malformed input (unknown members, wrong format or
// version, bad names or numbers, trailing data) or a rebuilt template whose
// hash differs from the recorded one or that records none (a *HashError);
// and voi.ErrExists for a registered
// template of the same name and another hash. r is unchanged on error.
func ReadJSON(r *Registry, data []byte) (*Template, error) {
	if r == nil {
		return nil, fmt.Errorf("tpl: template JSON: nil registry: %w", voi.ErrInvalid)
	}
	jt, t, err := compileJSON(data)
	if err != nil {
		return nil, err
	}
	if jt.Hash == nil || t.Hash() != *jt.Hash {
		return nil, &HashError{Name: jt.Name, Hash: t.Hash(), Recorded: jt.Hash}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if id := r.lookupLocked(jt.Name, true, 0); id >= 0 {
		if ex := r.tpls[id]; ex.Hash() == *jt.Hash {
			if m := t.Metadata(); !t.meta.empty() {
				_ = ex.SetMetadata(m) // checked on t, whose VOIs are ex's
			}
			return ex, nil
		}
		return nil, fmt.Errorf("tpl: template JSON: %q is registered with another hash: %w", jt.Name, voi.ErrExists)
	}
	t.reg, t.id = r, len(r.tpls)
	r.tpls = append(r.tpls, t)
	return t, nil
}

// HashError is ReadJSON's error for a template JSON form without "hash",
// or whose "hash" is not the hash of the template it rebuilds. It wraps
// voi.ErrInvalid.
type HashError struct {
	Name     string  // the template's name
	Hash     uint32  // the hash the template rebuilds with
	Recorded *uint32 // the form's "hash"; nil if it has none
}

// Problem says what is wrong with the "hash" and what to do, for tools
// that check templates (statsblob template check): `no "hash" (add
// "hash": 1734256991)`, or `"hash" is 7, the template rebuilds with hash
// 1734256991 (its VOIs or statistics differ from the ones the hash was
// made of)`.
func (e *HashError) Problem() string {
	if e.Recorded == nil {
		return fmt.Sprintf(`no "hash" (add "hash": %d)`, e.Hash)
	}
	return fmt.Sprintf(`"hash" is %d, the template rebuilds with hash %d (its VOIs or statistics differ from the ones the hash was made of)`, *e.Recorded, e.Hash)
}

func (e *HashError) Error() string {
	return fmt.Sprintf("tpl: template JSON: template %q: %s: %v", e.Name, e.Problem(), voi.ErrInvalid)
}

// Unwrap returns voi.ErrInvalid.
func (e *HashError) Unwrap() error { return voi.ErrInvalid }

// CompileJSON builds the template a JSON form describes, in a registry of
// its own, without checking its "hash" (which may be missing): for tools
// that check hand-written templates and tell their hash. It returns the
// recorded hash too (ok false if there is none). Errors as ReadJSON's,
// but for the hash and the registry.
func CompileJSON(data []byte) (t *Template, recorded uint32, ok bool, err error) {
	jt, t, err := compileJSON(data)
	if err != nil {
		return nil, 0, false, err
	}
	if jt.Hash != nil {
		return t, *jt.Hash, true, nil
	}
	return t, 0, false, nil
}

// compileJSON decodes a template's JSON form and builds the template in a
// scratch registry.
func compileJSON(data []byte) (jsonTemplate, *Template, error) {
	var jt jsonTemplate
	bad := func(format string, args ...any) error {
		return fmt.Errorf("tpl: template JSON: "+format+": %w", append(args, voi.ErrInvalid)...)
	}
	if len(data) > MaxJSONSize {
		return jt, nil, fmt.Errorf("tpl: template JSON of %d bytes exceeds %d: %w", len(data), MaxJSONSize, voi.ErrTooBig)
	}
	tooBig := func(format string, args ...any) error {
		return fmt.Errorf("tpl: template JSON: "+format+": %w", append(args, voi.ErrTooBig)...)
	}
	if excess := scanJSON(data, max(MaxJSONVOIs, MaxJSONStats, MaxJSONBuckets)); excess != "" {
		return jt, nil, tooBig("%s", excess)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&jt); err != nil {
		return jt, nil, bad("%v", err)
	}
	if len(jt.VOIs) > MaxJSONVOIs {
		return jt, nil, tooBig("%d VOIs, more than the %d a template can hold", len(jt.VOIs), MaxJSONVOIs)
	}
	buckets := 0
	for _, jv := range jt.VOIs {
		for _, js := range jv.Stats {
			if js.Hist != nil {
				buckets += len(js.Hist.Buckets)
			}
		}
	}
	if buckets > MaxJSONBuckets {
		return jt, nil, tooBig("%d histogram buckets, more than the %d a template can hold", buckets, MaxJSONBuckets)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return jt, nil, bad("data after the template")
	}
	if jt.Format != JSONFormat || jt.Version != JSONVersion && jt.Version != JSONVersionPatterns {
		return jt, nil, bad("format %q version %d, want %q version %d (or %d)", jt.Format, jt.Version, JSONFormat, JSONVersion, JSONVersionPatterns)
	}
	defs := make([]VOIDef, 0, len(jt.VOIs))
	for _, jv := range jt.VOIs {
		d, err := jv.def(jt.Version)
		if err != nil {
			return jt, nil, bad("VOI %d: %v", jv.ID, err)
		}
		defs = append(defs, d)
	}
	scratch := NewRegistry()
	t, err := scratch.New(jt.Name)
	if err != nil {
		return jt, nil, within("template JSON", err)
	}
	if err := t.addVOIs(defs); err != nil {
		return jt, nil, within("template JSON", err)
	}
	meta, err := jsonMetadata(&jt)
	if err != nil {
		return jt, nil, bad("%v", err)
	}
	if err := t.SetMetadata(meta); err != nil {
		return jt, nil, within("template JSON", err)
	}
	return jt, t, nil
}

// within wraps err, the error of a call of this package's that names the
// package already ("tpl: W: add VOI 0 ..."), with what the caller was
// doing, naming the package once: "tpl: template JSON: W: add VOI 0 ...",
// where fmt.Errorf("tpl: template JSON: %w") said "tpl: " twice.
// errors.Is and errors.As see err.
func within(what string, err error) error { return &withinError{what: what, err: err} }

type withinError struct {
	what string
	err  error
}

func (e *withinError) Error() string {
	return "tpl: " + e.what + ": " + strings.TrimPrefix(e.err.Error(), "tpl: ")
}

func (e *withinError) Unwrap() error { return e.err }

func (jv jsonVOI) def(version int) (VOIDef, error) {
	dt, ok := voi.ParseDType(jv.DType)
	if !ok || !dt.IsNumeric() || strings.ToUpper(jv.DType) != jv.DType {
		return VOIDef{}, fmt.Errorf("dtype %q (valid: %s)", jv.DType, strings.Join(dtypeNames(voi.DType.IsNumeric), ", "))
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
			return d, fmt.Errorf("statistic type %q (valid: SUM, MAX, MIN, HIST, TDGST)", js.Type)
		}
		spec := StatSpec{Type: st}
		switch {
		case st == voi.Hist && js.Hist != nil && js.TDigest == nil:
			h, err := js.Hist.spec(d, version)
			if err != nil {
				return d, err
			}
			spec.Hist = h
		case st == voi.TDgst && js.TDigest != nil && js.Hist == nil:
			tdt, ok := voi.ParseDType(js.TDigest.DType)
			if !ok || !tdt.IsTDigest() {
				return d, fmt.Errorf("t-digest dtype %q (valid: %s)", js.TDigest.DType, strings.Join(dtypeNames(voi.DType.IsTDigest), ", "))
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

// spec returns the histogram of VOI d that a version's members describe.
func (jh *jsonHist) spec(d VOIDef, version int) (hist.Spec, error) {
	dt, ok := voi.ParseDType(jh.DType)
	if !ok || !dt.IsHist() {
		return hist.Spec{}, fmt.Errorf("histogram dtype %q (valid: %s)", jh.DType, strings.Join(histDTypeNames(), ", "))
	}
	s := hist.Spec{DType: dt}
	if jh.Flags != nil {
		s.Flags = jh.Flags.v
	}
	found := false
	for sc, n := range schemeNames {
		if n == jh.Scheme {
			s.Scheme, found = sc, true
		}
	}
	if !found {
		return s, fmt.Errorf("histogram scheme %q (valid: LIN, EXP, LINEXP, USR)", jh.Scheme)
	}
	var berr error
	bound := func(n jsonNum) uint64 {
		if version == JSONVersionPatterns {
			p, err := strconv.ParseUint(string(n), 10, 64)
			if err != nil && berr == nil {
				berr = fmt.Errorf("version 1 bound %s is not a uint64 pattern", n)
			}
			return p
		}
		v, err := parseNum(string(n))
		if err == nil {
			var p uint64
			if p, err = v.pattern(d.DType, d.Prec); err == nil {
				return p
			}
		}
		if berr == nil {
			berr = err
		}
		return 0
	}
	have2 := func(ps ...*jsonNum) bool {
		for _, p := range ps {
			if p == nil {
				return false
			}
		}
		return true
	}
	none2 := func(ps ...*jsonNum) bool {
		for _, p := range ps {
			if p != nil {
				return false
			}
		}
		return true
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
		ok = have2(jh.LB, jh.UB) && have(jh.StepInc) && none(jh.StepBase, jh.StepExp, jh.LinStepDiv) && jh.Buckets == nil
		if ok {
			s.LB, s.UB, s.StepInc = bound(*jh.LB), bound(*jh.UB), *jh.StepInc
		}
	case hist.Exp:
		ok = have2(jh.LB, jh.UB) && have(jh.StepBase, jh.StepExp) && none(jh.StepInc, jh.LinStepDiv) && jh.Buckets == nil
		if ok {
			s.LB, s.UB, s.StepBase, s.StepExp = bound(*jh.LB), bound(*jh.UB), *jh.StepBase, *jh.StepExp
		}
	case hist.LinExp:
		ok = have2(jh.LB, jh.UB) && have(jh.StepBase, jh.LinStepDiv) && none(jh.StepInc, jh.StepExp) && jh.Buckets == nil
		if ok {
			s.LB, s.UB, s.StepBase, s.LinStepDiv = bound(*jh.LB), bound(*jh.UB), *jh.StepBase, *jh.LinStepDiv
		}
	case hist.Usr:
		ok = none2(jh.LB, jh.UB) && none(jh.StepInc, jh.StepBase, jh.StepExp, jh.LinStepDiv) && len(jh.Buckets) > 0
		s.Buckets = make([]hist.Bound, 0, len(jh.Buckets))
		for _, b := range jh.Buckets {
			s.Buckets = append(s.Buckets, hist.Bound{LB: bound(b[0]), UB: bound(b[1])})
		}
	}
	if !ok {
		return s, fmt.Errorf("histogram members do not match scheme %s (%s)", jh.Scheme, schemeMembers[s.Scheme])
	}
	if berr != nil {
		return s, berr
	}
	return s, nil
}

// MarshalJSON returns the registry's templates as a templates file: a JSON
// array of their JSON forms in slot order, which ReadJSONList reads back.
// A nil registry's MarshalJSON is an empty array (json.Marshal writes null
// for a nil pointer).
func (r *Registry) MarshalJSON() ([]byte, error) {
	var tpls []*Template
	if r != nil {
		r.mu.RLock()
		tpls = slices.Clone(r.tpls)
		r.mu.RUnlock()
	}
	if tpls == nil {
		tpls = []*Template{}
	}
	return json.Marshal(tpls)
}

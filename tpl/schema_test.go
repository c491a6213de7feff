package tpl_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/tcpstats"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

var updateExamples = flag.Bool("update-examples", false, "rewrite templates/examples from their Go definitions")

const (
	schemaFile  = "../templates/template.schema.json"
	examplesDir = "../templates/examples"
)

// exampleTemplates are the shipped examples, made with the Go-typed API.
func exampleTemplates(t *testing.T) map[string][]*tpl.Template {
	t.Helper()
	mk := func(name string, defs ...tpl.VOIDef) *tpl.Template {
		tp, err := tpl.NewRegistry().New(name)
		require.NoError(t, err)
		for _, d := range defs {
			require.NoError(t, tp.AddVOI(d), d.Name)
		}
		return tp
	}
	conn := mk("CONN",
		tpl.VOIDef{ID: 0, Name: "txbytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}},
		tpl.VOIDef{ID: 1, Name: "rtt", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Max(), tpl.Min(),
			tpl.HistLin(voi.CRHist32, 0, 1000, 50, hist.UBoundInf),
			tpl.TDigest(voi.TDgstClust32, 20, 4)}})
	service := mk("SERVICE",
		tpl.VOIDef{ID: 0, Name: "latency_us", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Max(),
			tpl.HistExp(voi.CRHist64, 1, 1000000, 2, 0, hist.UBoundInf), tpl.TDigestOf(tpl.TDigestSpec{DType: voi.TDgstClust64, NCtds: 50, Prec: 8, Mode: tdigest.Accurate})}},
		tpl.VOIDef{ID: 1, Name: "skew_ms", DType: voi.IntS32, Flags: voi.FlagRelUpdate, Stats: []tpl.StatSpec{tpl.Min(), tpl.Max(),
			tpl.HistRanges(voi.DRHist32, 0, [2]int32{-1000, -10}, [2]int32{-10, 10}, [2]int32{10, 1000})}},
		tpl.VOIDef{ID: 2, Name: "load", DType: voi.QS64, Prec: 16, Stats: []tpl.StatSpec{tpl.Sum(),
			tpl.HistBuckets(voi.CRHist64, hist.LBoundInf, 0, 0.5, 1, 2.5)}},
		tpl.VOIDef{ID: 4, Name: "status", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.HistBuckets[uint32](voi.DVHist32, 0, 200, 404, 500)}})
	reg := tpl.NewRegistry()
	tcp, err := tcpstats.New(reg)
	require.NoError(t, err)
	return map[string][]*tpl.Template{"conn.json": {conn}, "service.json": {service}, "tcp_default.json": {tcp}, "all.json": {conn, service, tcp}}
}

func indentJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, json.Indent(&buf, raw, "", "  "))
	return append(buf.Bytes(), '\n')
}

// TestSchemaExamples: every shipped example (templates/examples) and the
// README's JSON example are valid under the JSON Schema, read back with
// ReadJSONList, and are exactly what json.Marshal writes for the Go
// definitions above (go test ./tpl -run TestSchemaExamples
// -update-examples rewrites them).
func TestSchemaExamples(t *testing.T) {
	schema := loadSchema(t)
	examples := exampleTemplates(t)
	if *updateExamples {
		for name, tps := range examples {
			var v any = tps
			if len(tps) == 1 {
				v = tps[0]
			}
			require.NoError(t, os.WriteFile(filepath.Join(examplesDir, name), indentJSON(t, v), 0o644))
		}
	}
	files, err := filepath.Glob(filepath.Join(examplesDir, "*.json"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	require.ElementsMatch(t, slices.Collect(mapKeys(examples)), names, "an example per definition")
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, schema.validate(decodeNumbers(t, data)), f)
		tps, err := tpl.ReadJSONList(tpl.NewRegistry(), data)
		require.NoError(t, err, f)
		want := examples[filepath.Base(f)]
		require.Len(t, tps, len(want))
		for i := range tps {
			require.Equal(t, want[i].Bytes(), tps[i].Bytes(), f)
		}
		var v any = want
		if len(want) == 1 {
			v = want[0]
		}
		require.Equal(t, string(indentJSON(t, v)), string(data), f)
	}

	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(readme), "## Templates as JSON\n")
	require.True(t, ok, "README has a 'Templates as JSON' section")
	_, block, ok := strings.Cut(after, "```json\n")
	require.True(t, ok)
	block, _, _ = strings.Cut(block, "```\n")
	require.NoError(t, schema.validate(decodeNumbers(t, []byte(block))), "the README's example")
	_, err = tpl.ReadJSONList(tpl.NewRegistry(), []byte(block))
	require.NoError(t, err, "the README's example reads")
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestSchemaRejects: the schema (and the validator) say no where ReadJSON
// does, so TestSchemaExamples can fail.
func TestSchemaRejects(t *testing.T) {
	schema := loadSchema(t)
	good := `{"format":"statsblob-template","version":2,"name":"T","vois":[{"id":0,"name":"v","dtype":"INT_S32","stats":[{"type":"HIST","hist":{"dtype":"CRHIST32","scheme":"LIN","lb":-5,"ub":5,"stepinc":1}}]}]}`
	require.NoError(t, schema.validate(decodeNumbers(t, []byte(good))))
	for _, c := range []struct{ name, from, to, want string }{
		{"format", `"statsblob-template"`, `"other"`, "format"},
		{"version", `"version":2`, `"version":3`, "version"},
		{"dtype", `"INT_S32"`, `"INT32"`, "dtype"},
		{"unknown member", `"name":"v",`, `"name":"v","x":1,`, "x"},
		{"scheme members", `"stepinc":1`, `"stepbase":1`, "hist"},
		{"flag name", `"stepinc":1`, `"stepinc":1,"flags":["UPPER"]`, "hist"},
		{"negative step", `"stepinc":1`, `"stepinc":-1`, "hist"},
		{"no stats", `"stats":[{"type":"HIST","hist":{"dtype":"CRHIST32","scheme":"LIN","lb":-5,"ub":5,"stepinc":1}}]`, `"stats":[]`, "stats"},
		{"id type", `"id":0`, `"id":"0"`, "id"},
		{"t-digest mode", `{"type":"HIST","hist":{"dtype":"CRHIST32","scheme":"LIN","lb":-5,"ub":5,"stepinc":1}}`,
			`{"type":"TDGST","tdigest":{"dtype":"TDGSTCLUST32","nctds":20,"prec":4,"mode":"exact"}}`, "mode"},
	} {
		in := strings.Replace(good, c.from, c.to, 1)
		require.NotEqual(t, good, in, c.name)
		err := schema.validate(decodeNumbers(t, []byte(in)))
		require.Error(t, err, c.name)
		require.Contains(t, err.Error(), c.want, c.name)
	}
}

func decodeNumbers(t *testing.T, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	return v
}

// schemaNode is a JSON Schema (draft 2020-12) as decoded, with the root
// for $ref. The validator knows the keywords template.schema.json uses:
// $ref (to #/$defs/...), type, const, enum, oneOf, properties, required,
// additionalProperties (false), items, minItems, maxItems, minLength,
// maxLength, minimum, maximum; any other keyword fails the test, so the
// schema cannot silently use one it does not check.
type schemaNode struct {
	root map[string]any
	s    map[string]any
}

func loadSchema(t *testing.T) schemaNode {
	t.Helper()
	data, err := os.ReadFile(schemaFile)
	require.NoError(t, err)
	root := decodeNumbers(t, data).(map[string]any)
	return schemaNode{root: root, s: root}
}

var knownKeywords = map[string]bool{"$schema": true, "$id": true, "$defs": true, "title": true, "description": true,
	"$ref": true, "type": true, "const": true, "enum": true, "oneOf": true, "properties": true, "required": true,
	"additionalProperties": true, "items": true, "minItems": true, "maxItems": true, "minLength": true, "maxLength": true,
	"minimum": true, "maximum": true}

func (n schemaNode) sub(v any) schemaNode { return schemaNode{root: n.root, s: v.(map[string]any)} }

func (n schemaNode) validate(v any) error { return n.check(v, "$") }

func (n schemaNode) check(v any, at string) error {
	for k := range n.s {
		if !knownKeywords[k] {
			return fmt.Errorf("schema keyword %q is not supported by the test's validator", k)
		}
	}
	if ref, ok := n.s["$ref"].(string); ok {
		name, ok := strings.CutPrefix(ref, "#/$defs/")
		if !ok {
			return fmt.Errorf("%s: $ref %q", at, ref)
		}
		if err := n.sub(n.root["$defs"].(map[string]any)[name]).check(v, at); err != nil {
			return err
		}
	}
	if ty, ok := n.s["type"].(string); ok && !isType(v, ty) {
		return fmt.Errorf("%s: %v is not of type %s", at, v, ty)
	}
	if c, ok := n.s["const"]; ok && !jsonEqual(c, v) {
		return fmt.Errorf("%s: %v is not %v", at, v, c)
	}
	if e, ok := n.s["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return jsonEqual(x, v) }) {
		return fmt.Errorf("%s: %v is not one of %v", at, v, e)
	}
	if one, ok := n.s["oneOf"].([]any); ok {
		var errs []string
		match := 0
		for _, alt := range one {
			if err := n.sub(alt).check(v, at); err != nil {
				errs = append(errs, err.Error())
			} else {
				match++
			}
		}
		if match != 1 {
			return fmt.Errorf("%s: matches %d of oneOf's schemas, not 1 (%s)", at, match, strings.Join(errs, "; "))
		}
	}
	if num, ok := v.(json.Number); ok {
		x, _ := new(big.Float).SetString(num.String())
		if m, ok := n.s["minimum"].(json.Number); ok {
			if lim, _ := new(big.Float).SetString(m.String()); x.Cmp(lim) < 0 {
				return fmt.Errorf("%s: %v is below %v", at, num, m)
			}
		}
		if m, ok := n.s["maximum"].(json.Number); ok {
			if lim, _ := new(big.Float).SetString(m.String()); x.Cmp(lim) > 0 {
				return fmt.Errorf("%s: %v is above %v", at, num, m)
			}
		}
	}
	if s, ok := v.(string); ok {
		if m, ok := n.s["minLength"].(json.Number); ok && int64(len([]rune(s))) < must64(m) {
			return fmt.Errorf("%s: %q is shorter than %v", at, s, m)
		}
		if m, ok := n.s["maxLength"].(json.Number); ok && int64(len([]rune(s))) > must64(m) {
			return fmt.Errorf("%s: %q is longer than %v", at, s, m)
		}
	}
	if a, ok := v.([]any); ok {
		if m, ok := n.s["minItems"].(json.Number); ok && int64(len(a)) < must64(m) {
			return fmt.Errorf("%s: %d items, fewer than %v", at, len(a), m)
		}
		if m, ok := n.s["maxItems"].(json.Number); ok && int64(len(a)) > must64(m) {
			return fmt.Errorf("%s: %d items, more than %v", at, len(a), m)
		}
		if items, ok := n.s["items"]; ok {
			for i, x := range a {
				if err := n.sub(items).check(x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	}
	if o, ok := v.(map[string]any); ok {
		props, _ := n.s["properties"].(map[string]any)
		for _, r := range asStrings(n.s["required"]) {
			if _, ok := o[r]; !ok {
				return fmt.Errorf("%s: member %q is missing", at, r)
			}
		}
		for k, x := range o {
			p, ok := props[k]
			if !ok {
				if ap, ok := n.s["additionalProperties"].(bool); ok && !ap {
					return fmt.Errorf("%s: member %q is not allowed", at, k)
				}
				continue
			}
			if err := n.sub(p).check(x, at+"."+k); err != nil {
				return err
			}
		}
	}
	return nil
}

func isType(v any, ty string) bool {
	switch ty {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		return ok && !strings.ContainsAny(n.String(), ".eE")
	}
	return false
}

func jsonEqual(a, b any) bool {
	if x, ok := a.(json.Number); ok {
		y, ok := b.(json.Number)
		return ok && x.String() == y.String()
	}
	return fmt.Sprint(a) == fmt.Sprint(b) && fmt.Sprintf("%T", a) == fmt.Sprintf("%T", b)
}

func must64(n json.Number) int64 {
	i, err := n.Int64()
	if err != nil {
		panic(err)
	}
	return i
}

func asStrings(v any) []string {
	a, _ := v.([]any)
	out := make([]string, 0, len(a))
	for _, x := range a {
		out = append(out, x.(string))
	}
	return out
}

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// runTemplate checks a templates file and prints its templates' hashes
// (template hash) or hashes and compiled layouts (template check).
func runTemplate(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("template", "template check|hash FILE",
		"Template reads a templates file (one template's JSON form or an array of\n"+
			"them; README.md, \"Templates as JSON\") and builds each template as a\n"+
			"collector would.\n\n"+
			"  check  prints each template's hash and compiled layout: the blob size,\n"+
			"         and per VOI its statistics with their data offsets and sizes\n"+
			"         (a t-digest's with its clustering mode, c or accurate); and its\n"+
			"         metadata (version 2): the description, per VOI its unit, scale,\n"+
			"         kind, count and help, and the derived metrics.\n"+
			"         A template without \"hash\" is accepted and told its hash; one\n"+
			"         whose \"hash\" differs from the rebuilt template's is an error.\n"+
			"  hash   prints each template's spec, \"NAME\":HASH, one per line.\n\n"+
			"Errors name the template and what is wrong, with the valid names where a\n"+
			"name is wrong; the exit status is then 1.\n",
		stdout, stderr)
	pos, code, ok := fs.parse(args, 0)
	if !ok {
		return code
	}
	if len(pos) != 2 || pos[0] != "check" && pos[0] != "hash" {
		return fs.usageError("want check or hash and one FILE")
	}
	p, err := readInput(pos[1], maxTemplatesFile, "a templates file")
	if err != nil {
		fs.fail(err)
		return 1
	}
	name := displayName(pos[1])
	list := []json.RawMessage{p}
	if t := bytes.TrimLeft(p, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		if err := json.Unmarshal(p, &list); err != nil {
			fs.fail(fmt.Errorf("%s: %w", name, err))
			return 1
		}
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	status := 0
	for i, raw := range list {
		t, recorded, has, err := tpl.CompileJSON(raw)
		at := name
		if len(list) > 1 {
			at = fmt.Sprintf("%s: template %d", name, i)
		}
		if err != nil {
			w.Flush()
			fs.fail(fmt.Errorf("%s: %w", at, err))
			status = 1
			continue
		}
		if pos[0] == "hash" {
			fmt.Fprintln(w, t.Spec())
			continue
		}
		// The words of ReadJSON's error, which record, derive and the
		// collectors print.
		herr := &tpl.HashError{Name: t.Name(), Hash: t.Hash()}
		if has {
			herr.Recorded = &recorded
		}
		switch {
		case !has:
			fmt.Fprintf(w, "%s: %s: ok, hash %d; %s\n", at, t.Name(), t.Hash(), herr.Problem())
		case recorded != t.Hash():
			w.Flush()
			fs.fail(fmt.Errorf("%s: %s: %s", at, t.Name(), herr.Problem()))
			status = 1
			continue
		default:
			fmt.Fprintf(w, "%s: %s: ok, hash %d\n", at, t.Name(), t.Hash())
		}
		writeLayout(w, t)
	}
	return status
}

// writeLayout prints the compiled layout of template t: blob size, and
// each statistic's data type, offset and size, VOIs in id order; and its
// metadata, where it has any (a template without prints as before it had
// metadata).
func writeLayout(w io.Writer, t *tpl.Template) {
	b := blob.New(t, nil)
	if d := t.Description(); d != "" {
		fmt.Fprintf(w, "  description %q\n", d)
	}
	fmt.Fprintf(w, "  %d-byte blobs, %d VOI slots\n", b.CurSz(), b.NumVOIs())
	cur := int32(-1)
	for id, s := range b.Stats() {
		if id != cur {
			cur = id
			name, _ := t.VOIName(id)
			d, _ := t.VOI(name)
			rel := ""
			if d.Flags != 0 {
				rel = ", relative updates"
			}
			fmt.Fprintf(w, "  voi %d %q %v%s\n", id, name, s.VOIDType, rel)
			if m, ok := t.VOIMeta(id); ok {
				fmt.Fprintf(w, "    metadata: %s\n", voiMetaText(m))
			}
		}
		mode := ""
		if s.Type == voi.TDgst {
			mode = ", mode " + digestMode(t, id).String()
		}
		fmt.Fprintf(w, "    %-5v %-12v at %5d, %5d bytes%s\n", s.Type, s.DType, s.Offset, len(s.Data), mode)
	}
	for _, d := range t.Derived() {
		fmt.Fprintf(w, "  derived %q: %s\n", d.Name, derivedText(d))
	}
}

// digestMode is the clustering mode of VOI id's t-digest in t
// (tpl.TDigestSpec.Mode): that of the last TDGST of its definition, the
// one that takes the VOI's slot.
func digestMode(t *tpl.Template, id int32) tdigest.Mode {
	mode := tdigest.C
	for _, d := range t.VOIs() {
		if d.ID != id {
			continue
		}
		for _, sp := range d.Stats {
			if sp.Type == voi.TDgst {
				mode = sp.TDigest.Mode
			}
		}
	}
	return mode
}

// voiMetaText describes a VOI's metadata: "unit seconds, scale 1e-06,
// kind counter, count \"requests\", help \"Request latency.\"".
func voiMetaText(m tpl.VOIMeta) string {
	var parts []string
	if m.Unit != "" {
		parts = append(parts, "unit "+m.Unit)
	}
	if m.Scale != 0 {
		parts = append(parts, "scale "+strconv.FormatFloat(m.Scale, 'g', -1, 64))
	}
	if m.Kind != tpl.KindDefault {
		parts = append(parts, "kind "+m.Kind.String())
	}
	if m.Count != "" {
		parts = append(parts, "count "+strconv.Quote(m.Count))
	}
	if m.Help != "" {
		parts = append(parts, "help "+strconv.Quote(m.Help))
	}
	return strings.Join(parts, ", ")
}

// derivedText describes a derived metric: "average of \"latency_us\" by
// \"requests\", unit us".
func derivedText(d tpl.Derived) string {
	s := fmt.Sprintf("%s of %q", d.Op, d.Of)
	if d.By != "" {
		s += fmt.Sprintf(" by %q", d.By)
	}
	if d.SumSq != "" {
		s += fmt.Sprintf(", sum of squares %q", d.SumSq)
	}
	if d.Unit != "" {
		s += ", unit " + d.Unit
	}
	if d.Help != "" {
		s += ", help " + strconv.Quote(d.Help)
	}
	return s
}

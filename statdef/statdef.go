// Package statdef reads and changes, as text, which VOIs of a blob keep
// statistics: the definition file of Linux's statistics infrastructure.
// A line of space-separated key=value words either starts with name=VOI
// and applies to that VOI, or applies to all of them:
//
//	on=0                 turn every VOI off at once (Control.SetAll)
//	name=rtt on=1        turn VOI rtt on (Control.Set)
//	name=rtt data=reset  reset rtt's statistics (ResetVOI)
//	data=reset           reset every VOI's statistics
//
// A value that starts with a double quote is a Go-quoted string, so a VOI
// name may hold anything: Write quotes a name that holds white space or a
// byte that is not printable UTF-8, or starts with a quote
// (name="my voi" on=1), and writes every other name as it is.
//
// Write prints the current settings in the same form, with started= and
// stopped= times (RFC 3339, UTC), which Apply accepts and ignores, so a
// definition read back can be written again. Apply takes lines of MaxLine
// bytes, and longer ones by as much as the template's longest VOI name:
// a name of any length reads back. Handler serves both over
// HTTP (GET reads, POST applies), as the definition file in debugfs.
//
// Def switches a Switch: a *blob.Control, whose settings the update path
// obeys, or anything else that keeps per-VOI settings, as a collector
// does for what it exports (export/collector's /v1/definition). The
// statsblob command's def reads and changes a served definition, or resets
// VOIs of a blob file.
package statdef

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Resetter resets one VOI's statistics: a *blob.Sharded, or a *blob.Blob
// the caller does not update meanwhile.
type Resetter interface {
	ResetVOI(id int32) error
}

// Switch turns VOIs' statistics on and off and tells their settings: a
// *blob.Control, or what keeps settings for something else (a
// collector's export of its aggregates). Set's errors are returned by
// Apply as they are.
type Switch interface {
	Set(id int32, on bool) error
	SetAll(on bool)
	State(id int32) blob.VOIState
	AllState() blob.VOIState
}

// Def is the definition of the VOIs of Template, switched by Control (a
// *blob.Control, or another Switch) and reset through Reset (nil:
// data=reset is refused).
type Def struct {
	Template *tpl.Template
	Control  Switch
	Reset    Resetter
}

// MaxLine is the longest definition line Apply takes, in bytes, not
// counting a VOI name: a line may be longer by the length of the
// template's longest VOI name as Write writes it (QuoteName), so every
// line Write prints applies again, however long the names.
const MaxLine = 4096

// op is one parsed line.
type op struct {
	all   bool
	id    int32
	on    int8 // -1 unchanged, 0 off, 1 on
	reset bool
}

// Apply carries out the lines of text in order. It checks every line
// first: an unknown VOI name or key, a value other than 0/1 for on or
// reset for data, a word without '=', a line over MaxLine bytes (plus the
// longest VOI name), or data=reset without a Resetter give an error
// wrapping voi.ErrInvalid and change nothing. A Resetter's own error stops
// Apply there. The Resetter is given each VOI once, at the first line that
// resets it, however many lines do.
func (d Def) Apply(text string) error {
	if err := d.check(); err != nil {
		return err
	}
	var ops []op
	limit := -1              // MaxLine plus the longest name, found at the first long line
	var ids map[string]int32 // the VOIs' ids by name, made at the first name=
	for n, line := range strings.Split(text, "\n") {
		if len(line) > MaxLine && limit < 0 {
			limit = MaxLine + d.longestName()
		}
		if len(line) > MaxLine && len(line) > limit {
			return fmt.Errorf("statdef: line %d: %d bytes, over %d (%d and the longest VOI name): %w", n+1, len(line), limit, MaxLine, voi.ErrInvalid)
		}
		o, ok, err := d.parse(line, &ids)
		if err != nil {
			return fmt.Errorf("statdef: line %d: %w", n+1, err)
		}
		if ok {
			ops = append(ops, o)
		}
	}
	// Each VOI is reset once, however many lines reset it: a definition
	// of many data=reset lines costs its lines plus the VOIs, not their
	// product (a Resetter may note every reset, as the collector's logs
	// them).
	allReset, reset := false, map[int32]bool{}
	for _, o := range ops {
		if o.on >= 0 {
			if o.all {
				d.Control.SetAll(o.on == 1)
			} else if err := d.Control.Set(o.id, o.on == 1); err != nil {
				return err
			}
		}
		if o.reset && !allReset {
			ids := []int32{o.id}
			if o.all {
				ids, allReset = d.allIDs(), true
			}
			for _, id := range ids {
				if reset[id] {
					continue
				}
				reset[id] = true
				if err := d.Reset.ResetVOI(id); err != nil {
					return fmt.Errorf("statdef: reset of VOI %d: %w", id, err)
				}
			}
		}
	}
	return nil
}

// check refuses a Def without a template or a control (a nil
// *blob.Control in Control included).
func (d Def) check() error {
	if c, ok := d.Control.(*blob.Control); d.Template == nil || d.Control == nil || ok && c == nil {
		return fmt.Errorf("statdef: definition without a template or control: %w", voi.ErrInvalid)
	}
	return nil
}

// longestName returns the length of the template's longest VOI name as
// Write writes it.
func (d Def) longestName() int {
	n := 0
	for _, v := range d.Template.VOIs() {
		n = max(n, len(QuoteName(v.Name)))
	}
	return n
}

// allIDs returns the ids of the template's VOIs.
func (d Def) allIDs() []int32 {
	var ids []int32
	for _, v := range d.Template.VOIs() {
		ids = append(ids, v.ID)
	}
	return ids
}

// word is one key=value word of a line, w as written.
type word struct{ w, k, v string }

// words splits a line into key=value words: runs of non-space characters
// (as strings.Fields splits), where a value that starts with '"' is a
// Go-quoted string, which may hold spaces, and ends the word.
func words(line string) ([]word, error) {
	var ws []word
	for {
		line = strings.TrimLeftFunc(line, unicode.IsSpace)
		if line == "" {
			return ws, nil
		}
		end := strings.IndexFunc(line, unicode.IsSpace)
		if end < 0 {
			end = len(line)
		}
		w := line[:end]
		k, v, found := strings.Cut(w, "=")
		if !found {
			return nil, fmt.Errorf("word %q is not key=value: %w", w, voi.ErrInvalid)
		}
		if strings.HasPrefix(v, `"`) {
			q, err := strconv.QuotedPrefix(line[len(k)+1:])
			if err != nil {
				return nil, fmt.Errorf("word %q: the value is not a complete Go-quoted string: %w", w, voi.ErrInvalid)
			}
			end = len(k) + 1 + len(q)
			if r, _ := utf8.DecodeRuneInString(line[end:]); end < len(line) && !unicode.IsSpace(r) {
				return nil, fmt.Errorf("word %q: the quoted value is followed by %q: %w", line[:end], r, voi.ErrInvalid)
			}
			w = line[:end]
			v, _ = strconv.Unquote(q) // QuotedPrefix checked it
		}
		ws = append(ws, word{w: w, k: k, v: v})
		line = line[end:]
	}
}

// QuoteName returns a VOI name as a definition writes it: Go-quoted if it
// holds white space or a byte that is not printable UTF-8, or starts with
// a double quote; else as it is. Apply reads either form back.
func QuoteName(name string) string {
	if strings.HasPrefix(name, `"`) || !utf8.ValidString(name) {
		return strconv.Quote(name)
	}
	for _, r := range name {
		if unicode.IsSpace(r) || !strconv.IsPrint(r) {
			return strconv.Quote(name)
		}
	}
	return name
}

// parse reads one line; ok is false for a blank one. *ids is the
// template's VOI ids by name, made at the first line that names a VOI:
// a definition of many lines reads the template's VOIs once, not once a
// line.
func (d Def) parse(line string, ids *map[string]int32) (op, bool, error) {
	o := op{all: true, on: -1}
	ws, err := words(line)
	if err != nil || len(ws) == 0 {
		return o, false, err
	}
	for i, wd := range ws {
		w, k, v := wd.w, wd.k, wd.v
		switch {
		case k == "name" && i == 0:
			if *ids == nil {
				*ids = d.idsByName()
			}
			id, ok := (*ids)[v]
			if !ok {
				return o, false, fmt.Errorf("no VOI named %q in %s: %w", v, d.Template.Spec(), voi.ErrInvalid)
			}
			o.all, o.id = false, id
		case k == "on" && (v == "0" || v == "1"):
			o.on = int8(v[0] - '0')
		case k == "data" && v == "reset":
			if d.Reset == nil {
				return o, false, fmt.Errorf("data=reset without a blob to reset: %w", voi.ErrInvalid)
			}
			o.reset = true
		case k == "started" || k == "stopped":
			// Read back by Write: informative only.
		default:
			return o, false, fmt.Errorf("%q: unknown key or value (name= first, on=0|1, data=reset): %w", w, voi.ErrInvalid)
		}
	}
	return o, true, nil
}

// idsByName returns the template's VOI ids by name: of a name several
// VOIs share, the first added's (as tpl.Template.VOI finds it).
func (d Def) idsByName() map[string]int32 {
	vs := d.Template.VOIs()
	ids := make(map[string]int32, len(vs))
	for _, v := range vs {
		if _, dup := ids[v.Name]; !dup {
			ids[v.Name] = v.ID
		}
	}
	return ids
}

// Write prints the definition: a line for all VOIs, then one per VOI in
// the order they were added. Apply takes every line back: a line is
// MaxLine bytes at most besides its VOI name.
func (d Def) Write(w io.Writer) error {
	if err := d.check(); err != nil {
		return err
	}
	var b strings.Builder
	line := func(prefix string, s blob.VOIState) {
		b.WriteString(prefix)
		if s.On {
			b.WriteString("on=1")
		} else {
			b.WriteString("on=0")
		}
		for _, t := range []struct {
			k string
			t time.Time
		}{{"started", s.Started}, {"stopped", s.Stopped}} {
			if !t.t.IsZero() {
				fmt.Fprintf(&b, " %s=%s", t.k, t.t.UTC().Format(time.RFC3339Nano))
			}
		}
		b.WriteByte('\n')
	}
	line("", d.Control.AllState())
	for _, v := range d.Template.VOIs() {
		line("name="+QuoteName(v.Name)+" ", d.Control.State(v.ID))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

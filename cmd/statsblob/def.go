package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/statdef"
)

// maxDefAnswer bounds the definition def reads from a server: a line per
// VOI of a blob, each under statdef.MaxLine besides its VOI name.
const maxDefAnswer = 1 << 20

// runDef reads or changes a definition (package statdef) a server serves,
// or resets VOIs of a blob file.
func runDef(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("def", "def [-token T] [-timeout D] [-f FILE] [-templates TFILE -o OUT] URL|BLOB [LINE...]",
		"Def reads and changes, in the text form of Linux's statistics definition\n"+
			"file, which VOIs keep (or export) statistics. With only URL it GETs the\n"+
			"definition a statdef.Handler or a statsblob-collector's /v1/definition?tpl=NAME\n"+
			"serves and prints it: a line for all VOIs, then one per VOI, with started= and\n"+
			"stopped= times. With LINEs (each argument one line), or the lines of -f FILE\n"+
			"(\"-\": standard input), it POSTs them and prints the definition as it now is:\n"+
			"\n"+
			"  on=0                 turn every VOI off at once\n"+
			"  name=rtt on=1        turn VOI rtt on\n"+
			"  name=rtt data=reset  reset rtt's statistics\n"+
			"  data=reset           reset every VOI's statistics\n"+
			"\n"+
			"A VOI name with white space or unprintable bytes is Go-quoted:\n"+
			"name=\"my voi\" on=0.\n"+
			"\n"+
			"A refusal (4xx, 5xx) prints the status and the server's reason on stderr and\n"+
			"changes nothing; the exit status is then 1.\n"+
			"\n"+
			"With -templates and -o, BLOB is a blob file instead: its data=reset lines\n"+
			"reset the VOIs' statistics (blob.ResetVOI, the bytes the C's reset gives\n"+
			"them) and the result is written to OUT (\"-o -\": standard output); on=\n"+
			"has no meaning for a file and is a usage error.\n"+
			"\n"+
			"Examples:\n"+
			"  statsblob def 'http://127.0.0.1:9129/v1/definition?tpl=TCP_DEFAULT'\n"+
			"  statsblob def -token $T 'http://127.0.0.1:9129/v1/definition?tpl=TCP_DEFAULT' 'name=rtt on=0' 'data=reset'\n"+
			"  statsblob def -templates templates.json -o clean.blob conn.blob 'name=rtt data=reset'\n",
		stdout, stderr)
	token := fs.String("token", "", "send `T` as a bearer token (Authorization: Bearer T)")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after `D`")
	file := fs.String("f", "", "read the lines from `FILE` (- for standard input) instead of arguments")
	tfile := fs.String("templates", "", "templates `TFILE` of a BLOB file")
	out := fs.String("o", "", "write the reset blob to `OUT` (- for standard output)")
	pos, code, ok := fs.parse(args, 1)
	if !ok {
		return code
	}
	target, lines := pos[0], pos[1:]
	if *file != "" {
		if len(lines) > 0 {
			return fs.usageError("LINE arguments and -f: give the lines one way")
		}
		p, err := readInput(*file, statdef.MaxBody, "a definition")
		if err != nil {
			fs.fail(err)
			return 1
		}
		lines = strings.Split(strings.TrimSuffix(string(p), "\n"), "\n")
	}
	for _, l := range lines {
		if strings.ContainsAny(l, "\n\r") {
			return fs.usageError("LINE %q holds a line break: give each line as its own argument", l)
		}
	}
	if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
		if *tfile != "" || *out != "" {
			return fs.usageError("-templates and -o are for a BLOB file, not a URL")
		}
		if *timeout <= 0 {
			return fs.usageError("-timeout %v: want a positive duration", *timeout)
		}
		return defRemote(fs, target, lines, *token, *timeout, stdout)
	}
	if *token != "" {
		return fs.usageError("-token is for a URL, not a BLOB file")
	}
	if *tfile == "" || *out == "" {
		return fs.usageError("a BLOB file needs -templates TFILE and -o OUT (or give an http:// or https:// URL)")
	}
	return defFile(fs, target, lines, *tfile, *out, stdout)
}

// defRemote GETs the definition at url, or POSTs lines to it, and prints
// the answer.
func defRemote(fs *flagSet, url string, lines []string, token string, timeout time.Duration, stdout io.Writer) int {
	x := exchange{method: http.MethodGet, url: url, accept: "text/plain", token: token,
		timeout: timeout, limit: maxDefAnswer, what: "definition"}
	if len(lines) > 0 {
		x.method, x.body = http.MethodPost, strings.NewReader(strings.Join(lines, "\n")+"\n")
		x.contentType = "text/plain; charset=utf-8"
	}
	answer, _, err := x.do()
	var bad errBadURL
	if errors.As(err, &bad) {
		return fs.usageError("URL %q: %v", url, bad.err)
	}
	if err != nil {
		fs.fail(err)
		return 1
	}
	if _, err := stdout.Write(answer); err != nil {
		fs.fail(err)
		return 1
	}
	return 0
}

// onOff is a statdef.Switch that records whether a line set a VOI, or all,
// on or off (on: the last setting, 0 or 1).
type onOff struct {
	set bool
	on  int
}

func (s *onOff) Set(_ int32, on bool) error { s.SetAll(on); return nil }
func (s *onOff) SetAll(on bool) {
	s.set, s.on = true, 0
	if on {
		s.on = 1
	}
}
func (s *onOff) State(int32) blob.VOIState { return blob.VOIState{On: true} }
func (s *onOff) AllState() blob.VOIState   { return blob.VOIState{On: true} }

// noResets takes data=reset lines and resets nothing.
type noResets struct{}

func (noResets) ResetVOI(int32) error { return nil }

// resets records the VOIs a file's definition resets.
type resets struct {
	b   *blob.Blob
	ids []int32
}

func (r *resets) ResetVOI(id int32) error {
	if err := r.b.ResetVOI(id); err != nil {
		return err
	}
	r.ids = append(r.ids, id)
	return nil
}

// defFile applies data=reset lines to the blob file name and writes the
// result to out.
func defFile(fs *flagSet, name string, lines []string, tfile, out string, stdout io.Writer) int {
	if len(lines) == 0 {
		return fs.usageError("a BLOB file needs data=reset lines: a file keeps no on/off settings to print")
	}
	ts, err := readTemplates(tfile)
	if err != nil {
		fs.fail(err)
		return 1
	}
	b, err := readBlob(name)
	if err != nil {
		fs.fail(err)
		return 1
	}
	t, err := ts.byHash(b.TplHash())
	if err != nil {
		fs.fail(fmt.Errorf("%s: %w", displayName(name), err))
		return 1
	}
	// A file keeps no on/off settings: each line read as Apply reads it
	// (a quoted VOI name may hold " on=") must set none. A line Apply
	// refuses is reported by the Apply below.
	for i, l := range lines {
		sw := &onOff{}
		if (statdef.Def{Template: t, Control: sw, Reset: noResets{}}).Apply(l) == nil && sw.set {
			return fs.usageError("line %d: \"on=%d\": on/off has no meaning for a blob file (only data=reset)", i+1, sw.on)
		}
	}
	r := &resets{b: b}
	// The Control is a stand-in: no on= reaches it.
	d := statdef.Def{Template: t, Control: &blob.Control{}, Reset: r}
	if err := d.Apply(strings.Join(lines, "\n")); err != nil {
		fs.fail(fmt.Errorf("%s: %w", displayName(name), err))
		return 1
	}
	if out == "-" {
		if _, err := stdout.Write(b.Bytes()); err != nil {
			fs.fail(err)
			return 1
		}
	} else if err := writeFileAtomic(out, b.Bytes()); err != nil {
		fs.fail(err)
		return 1
	}
	names := make([]string, len(r.ids))
	for i, id := range r.ids {
		n, _ := t.VOIName(id)
		names[i] = statdef.QuoteName(n)
	}
	fmt.Fprintf(fs.stderr, "statsblob def: reset %s of %s\n", strings.Join(names, ", "), t.Name())
	return 0
}

package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/statsblob/statsblob/tostr"
)

// runRender prints blob files as freeform text or JSON.
func runRender(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("render", "render [-format freeform|json] [-array] [-objdump] [-templates FILE] FILE...",
		"Render prints each blob file as the C's stats_blob_tostr does: freeform text\n"+
			"(the default) or JSON. With -format json every file is one JSON document on\n"+
			"one line (JSON Lines), or, with -array, one element of a JSON array. With\n"+
			"-templates, template and VOI names come from the templates file (one\n"+
			"template's JSON form or an array of them, as the demo writes); a blob whose\n"+
			"template is not in it is an error. The freeform header shows the blob's\n"+
			"address as 0x0 (the C prints its buffer's), so renderings of the same\n"+
			"bytes are the same text.\n\n"+
			"A file that cannot be read or rendered is reported on stderr, one line per\n"+
			"file; the others are still rendered and the exit status is 1.\n",
		stdout, stderr)
	format := fs.String("format", "freeform", "output format, `freeform|json` (any case)")
	array := fs.Bool("array", false, "with -format json, write one JSON array instead of one document per line")
	objdump := fs.Bool("objdump", false, "include the blob's layout (header, every slot)")
	tfile := fs.String("templates", "", "templates `FILE` (one template's JSON or an array of them) for names")
	files, code, ok := fs.parse(args, 1)
	if !ok {
		return code
	}
	o := tostr.Options{Flags: tostr.NoAddr}
	switch strings.ToLower(*format) {
	case "freeform":
	case "json":
		o.Format = tostr.JSON
	default:
		return fs.usageError("unknown format %q (freeform or json)", *format)
	}
	if *array && o.Format != tostr.JSON {
		return fs.usageError("-array needs -format json")
	}
	if *objdump {
		o.Flags |= tostr.Objdump
	}
	var ts *templates
	if *tfile != "" {
		var err error
		if ts, err = readTemplates(*tfile); err != nil {
			fs.fail(err)
			return 1
		}
		o.Registry = ts.reg
		o.Flags |= tostr.Meta
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	status := 0
	sep := "[\n"
	for _, name := range files {
		out, err := render(name, ts, o)
		if err != nil {
			w.Flush()
			fs.fail(err)
			status = 1
			continue
		}
		if *array {
			w.WriteString(sep)
			sep = ",\n"
		}
		w.Write(out)
		if !*array {
			w.WriteByte('\n')
		}
	}
	if *array {
		if sep == "[\n" {
			w.WriteString(sep)
		}
		w.WriteString("\n]\n")
	}
	return status
}

// render reads one blob file and renders it. JSON renderings are always
// one valid JSON document (tostr.JSONMarshaler), also for a blob without
// VOIs.
func render(name string, ts *templates, o tostr.Options) ([]byte, error) {
	b, err := readBlob(name)
	if err != nil {
		return nil, err
	}
	if ts != nil {
		if _, err := ts.byHash(b.TplHash()); err != nil {
			return nil, fmt.Errorf("%s: %w", displayName(name), err)
		}
	}
	var out []byte
	if o.Format == tostr.JSON {
		out, err = tostr.JSONMarshaler{Blob: b, Flags: o.Flags, Registry: o.Registry}.MarshalJSON()
	} else {
		out, err = tostr.Append(nil, b, o)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", displayName(name), err)
	}
	return out, nil
}

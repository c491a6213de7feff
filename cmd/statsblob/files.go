package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/tpl"
)

// maxTemplatesFile bounds the size of a templates file (the demo's is
// about 3 KB).
const maxTemplatesFile = 16 << 20

// displayName is how messages name an input: "-" is standard input.
func displayName(name string) string {
	if name == "-" {
		return "<stdin>"
	}
	return name
}

// readInput reads a file, or standard input for "-", failing for inputs
// larger than limit bytes (what says what they should be) without reading
// more than limit+1 of them.
func readInput(name string, limit int64, what string) ([]byte, error) {
	var r io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err // *PathError names the file
		}
		defer f.Close()
		r = f
	}
	p, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", displayName(name), err)
	}
	if int64(len(p)) > limit {
		return nil, fmt.Errorf("%s: more than %d bytes, too large for %s", displayName(name), limit, what)
	}
	return p, nil
}

// readBlob reads and validates a blob file ("-": standard input).
func readBlob(name string) (*blob.Blob, error) {
	p, err := readInput(name, abi.MaxBlobSz, "a blob")
	if err != nil {
		return nil, err
	}
	b, err := blob.FromBytes(p, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", displayName(name), err)
	}
	return b, nil
}

// templates is the content of a templates file.
type templates struct {
	file string // as given on the command line
	reg  *tpl.Registry
	list []*tpl.Template
}

// readTemplates reads a templates file: one template's JSON form (what
// json.Marshal of a *tpl.Template writes) or a JSON array of them (what
// `statsblob demo` writes), and registers them in a new registry.
func readTemplates(name string) (*templates, error) {
	p, err := readInput(name, maxTemplatesFile, "a templates file")
	if err != nil {
		return nil, err
	}
	return parseTemplates(displayName(name), p)
}

// parseTemplates parses the content p of templates file name (see
// readTemplates).
func parseTemplates(name string, p []byte) (*templates, error) {
	ts := &templates{file: name, reg: tpl.NewRegistry()}
	list, err := tpl.ReadJSONList(ts.reg, p)
	if err != nil {
		return nil, fmt.Errorf("templates file %s: %w", ts.file, err)
	}
	ts.list = list
	return ts, nil
}

// byHash returns the template of a blob's hash, or an error naming the
// templates file and the templates it holds.
func (ts *templates) byHash(hash uint32) (*tpl.Template, error) {
	if t, err := ts.reg.ByHash(hash); err == nil {
		return t, nil
	}
	specs := make([]string, len(ts.list))
	for i, t := range ts.list {
		specs[i] = t.Spec()
	}
	return nil, fmt.Errorf("template hash %d is not in templates file %s (%s)", hash, ts.file, holds(specs))
}

// holds says what a templates file holds: "it holds A, B", or "it holds
// no template" for an empty array.
func holds(names []string) string {
	if len(names) == 0 {
		return "it holds no template"
	}
	return "it holds " + strings.Join(names, ", ")
}

// writeTemplates writes templates as a templates file.
func writeTemplates(name string, tpls ...*tpl.Template) error {
	p, err := json.MarshalIndent(tpls, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(name, append(p, '\n'), 0o644)
}

// writeFileAtomic writes p to name through a temporary file in the same
// directory, so a reader never sees a partial file.
func writeFileAtomic(name string, p []byte) (err error) {
	dir, base := filepath.Split(name)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(p); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), name)
}

package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tpl"
)

// readBlob reads and validates a blob file.
func readBlob(name string) (*blob.Blob, error) {
	p, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	if len(p) > 1<<16 {
		return nil, fmt.Errorf("%s: %d bytes is larger than any blob", name, len(p))
	}
	b, err := blob.FromBytes(p, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return b, nil
}

// readTemplates registers the templates of a templates file (a JSON array
// of template JSON forms, as `statsblob demo` writes) in reg.
func readTemplates(reg *tpl.Registry, name string) error {
	p, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	var list []json.RawMessage
	if err := json.Unmarshal(p, &list); err != nil {
		return fmt.Errorf("%s: not a JSON array of templates: %w", name, err)
	}
	for i, raw := range list {
		if _, err := tpl.ReadJSON(reg, raw); err != nil {
			return fmt.Errorf("%s: template %d: %w", name, i, err)
		}
	}
	return nil
}

// writeTemplates writes templates as a templates file.
func writeTemplates(name string, tpls ...*tpl.Template) error {
	p, err := json.MarshalIndent(tpls, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(name, append(p, '\n'), 0o644)
}

package main

import (
	"bufio"
	"fmt"
	"io"

	"github.com/statsblob/statsblob/tostr"
	"github.com/statsblob/statsblob/tpl"
)

// runRender prints blob files as text.
func runRender(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("render", "render [--format freeform|json] [--objdump] [--templates FILE] FILE...", stderr)
	format := fs.String("format", "freeform", "output format: freeform or json")
	objdump := fs.Bool("objdump", false, "include the blob's layout (header, every slot)")
	templates := fs.String("templates", "", "templates file (JSON array, as the demo writes) for names")
	if !parseFiles(fs, args) {
		return 2
	}
	o := tostr.Options{Registry: tpl.NewRegistry()}
	switch *format {
	case "freeform":
	case "json":
		o.Format = tostr.JSON
	default:
		fmt.Fprintf(stderr, "statsblob render: unknown format %q\n", *format)
		return 2
	}
	if *objdump {
		o.Flags |= tostr.Objdump
	}
	if *templates != "" {
		if err := readTemplates(o.Registry, *templates); err != nil {
			fmt.Fprintf(stderr, "statsblob render: %v\n", err)
			return 1
		}
		o.Flags |= tostr.Meta
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	status := 0
	for _, name := range fs.Args() {
		b, err := readBlob(name)
		if err != nil {
			fmt.Fprintf(stderr, "statsblob render: %v\n", err)
			status = 1
			continue
		}
		out, err := tostr.Append(nil, b, o)
		if err != nil {
			fmt.Fprintf(stderr, "statsblob render: %s: %v\n", name, err)
			status = 1
			continue
		}
		w.Write(out)
		w.WriteByte('\n')
	}
	return status
}

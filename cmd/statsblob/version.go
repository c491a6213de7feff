package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// runVersion prints the module version of the binary (as the go command
// stamped it: a tag, a pseudo-version of the commit, or "(devel)") and the
// Go release and platform it was built with.
func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("version", "version",
		"Version prints statsblob's module version, as the go command recorded it in\n"+
			"the binary (a release tag, a pseudo-version naming the commit, or (devel)),\n"+
			"and the Go release and platform it was built with. --version is the same.\n",
		stdout, stderr)
	pos, code, ok := fs.parse(args, 0)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return fs.usageError("unexpected argument %q", pos[0])
	}
	fmt.Fprintf(stdout, "statsblob %s %s %s/%s\n", moduleVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}

// moduleVersion is the main module's version recorded in the binary.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// Command statsblob is the statsblob tool: a demo of the library, the
// conformance scenario runner, and (as they land) tools to render, inspect
// and merge blob files.
//
//	statsblob demo              run the demo on the embedded default workload
//	statsblob render FILE...    print blob files as text (freeform or JSON)
//	statsblob inspect FILE...   validate and summarise blob files
//	statsblob merge -o OUT F... merge blob files of one template
//	statsblob run FILE...       run conformance scenarios (FORMAT.md)
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

type command struct {
	name, usage, help string
	run               func(args []string, stdout, stderr io.Writer) int
}

var commands []command

func init() {
	commands = []command{
		{"demo", "demo [flags]", "build a template, update it from a seeded stream, snapshot and render", runDemo},
		{"render", "render [flags] FILE...", "print blob files as freeform text or JSON", runRender},
		{"inspect", "inspect FILE...", "validate blob files and summarise them", runInspect},
		{"merge", "merge -o OUT FILE...", "merge blob files of one template into one", runMerge},
		{"run", "run FILE...", "run conformance scenarios and print their output", runScenarios},
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: statsblob COMMAND [ARGS]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-24s %s\n", c.usage, c.help)
	}
	fmt.Fprintf(w, "\nRun 'statsblob COMMAND -h' for a command's flags.\n")
}

func main() { os.Exit(mainArgs(os.Args[1:], os.Stdout, os.Stderr)) }

func mainArgs(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "statsblob: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

// newFlags returns a flag set for a subcommand that prints its usage to
// stderr.
func newFlags(name, usageLine string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: statsblob %s\n", usageLine)
		fs.PrintDefaults()
	}
	return fs
}

// parseFiles parses a subcommand's flags and reports whether file
// arguments follow; without any it prints the usage. A false result means
// exit status 2.
func parseFiles(fs *flag.FlagSet, args []string) bool {
	if err := fs.Parse(args); err != nil {
		return false
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return false
	}
	return true
}

// Command statsblob is the statsblob tool: a demo of the library, the
// conformance scenario runner, and tools that inspect, render, merge and
// query blob files.
//
//	statsblob demo                          run the demo on the embedded default workload
//	statsblob template check|hash FILE      check a templates file, print hashes and layouts
//	statsblob record -templates F -tpl T -voi V -o OUT [FILE]   make a blob from values
//	statsblob inspect FILE...               validate and summarise blob files
//	statsblob render [-format F] FILE...    print blob files as freeform text or JSON
//	statsblob merge -o OUT FILE...          merge blob files of one template
//	statsblob quantile -voi V -q Q FILE...  merge blob files and print quantiles of a VOI
//	statsblob plot -voi V [-svg F] FILE...  percentile table and plot of a VOI
//	statsblob fetch -o OUT URL              save a statsblob-collector's merged aggregate
//	statsblob def URL [LINE...]             read or change a definition: name=rtt on=0, data=reset
//	statsblob iostat [OLD] NEW              iostat's figures per device from devstat blobs
//	statsblob derive -templates F [OLD] NEW the derived metrics a template declares
//	statsblob run FILE...                   run conformance scenarios (FORMAT.md)
//	statsblob gen [-coverage] SEED          print a generated scenario, or the generator's coverage
//	statsblob diff -cref PATH -seeds A:B    run generated scenarios through a C build and the Go runner
//	statsblob version                       print the version (also --version)
//
// Every command prints its full help with -h, --help or 'statsblob help
// COMMAND'. Flags take one or two dashes (-format and --format are the
// same flag; the help shows one dash) and may come before or after file
// names; "--" ends the flags. A file name "-" reads standard input.
//
// Exit status: 0 on success, 1 if any input could not be used (every bad
// file is reported on its own line on stderr, after the others are
// processed), 2 for a usage error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// command is one subcommand: its name, the one line 'statsblob -h' shows,
// an example of its use, and its entry point, which parses its own flags
// (see newFlags).
type command struct {
	name, summary, example string
	run                    func(args []string, stdout, stderr io.Writer) int
}

// commands is the table of subcommands, in the order the help lists them.
// It is filled in init because 'help' refers back to it.
var commands []command

func init() {
	commands = []command{
		{"demo", "simulate TCP connections, write their blobs, merge them and print RTT quantiles",
			"statsblob demo -conns 1000 -out demo-out", runDemo},
		{"template", "check a templates file, print its templates' hashes and layouts",
			"statsblob template check demo-out/templates.json", runTemplate},
		{"record", "make a blob file from a template and values (stdin or a CSV column)",
			"seq 1 100 | statsblob record -templates demo-out/templates.json -tpl TCP_DEFAULT -voi TCP_RTT -o rtt.blob", runRecord},
		{"inspect", "validate blob files and summarise them",
			"statsblob inspect -templates demo-out/templates.json demo-out/*.blob", runInspect},
		{"render", "print blob files as freeform text or JSON",
			"statsblob render -format json -templates demo-out/templates.json rtt.blob", runRender},
		{"merge", "merge blob files of one template into one blob file",
			"statsblob merge -o all.blob demo-out/*.blob", runMerge},
		{"quantile", "merge blob files and print quantiles of a VOI's t-digest or histogram",
			"statsblob quantile -voi TCP_RTT -q p50,p99,p99.9 -templates demo-out/templates.json demo-out/*.blob", runQuantile},
		{"plot", "print a VOI's percentile table and a plot of its histogram or t-digest",
			"statsblob plot -voi TCP_RTT -templates demo-out/templates.json -svg rtt.svg all.blob", runPlot},
		{"fetch", "save the merged aggregate a statsblob-collector serves (GET /v1/aggregate)",
			"statsblob fetch -o web.blob 'http://127.0.0.1:9129/v1/aggregate?tpl=TCP_DEFAULT&host=web*'", runFetch},
		{"def", "read or change a definition (name=rtt on=0, data=reset) a server serves, or reset VOIs of a blob file",
			"statsblob def 'http://127.0.0.1:9129/v1/definition?tpl=TCP_DEFAULT' 'name=rtt on=0'", runDef},
		{"iostat", "print iostat's figures per device from devstat blobs (one window, or two readings)",
			"statsblob iostat readings/0900 readings/0905", runIostat},
		{"derive", "print the derived metrics a blob's template declares (one reading, or two)",
			"statsblob derive -templates templates.json -elapsed 5m old.blob new.blob", runDerive},
		{"run", "run conformance scenarios and print their output",
			"statsblob run testdata/conformance/scenarios/*.scn", runScenarios},
		{"gen", "print generated conformance scenarios, or the generator's coverage",
			"statsblob gen 42", runGen},
		{"diff", "run generated scenarios through a C reference build and the Go runner, report differences",
			"statsblob diff -cref ./cref -seeds 1:1000", runDiff},
		{"version", "print the version of statsblob and of the Go it was built with",
			"statsblob version", runVersion},
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: statsblob COMMAND [FLAGS] [FILE...]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
		fmt.Fprintf(w, "  %-9s   e.g. %s\n", "", c.example)
	}
	fmt.Fprint(w, "\nRun 'statsblob COMMAND -h' or 'statsblob help COMMAND' for a command's flags.\n")
}

func main() { os.Exit(mainArgs(os.Args[1:], os.Stdout, os.Stderr)) }

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func mainArgs(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		usage(stdout)
		return 0
	case "-version", "--version":
		return runVersion(nil, stdout, stderr)
	case "help":
		if len(args) == 1 {
			usage(stdout)
			return 0
		}
		if c, ok := lookup(args[1]); ok {
			return c.run([]string{"-h"}, stdout, stderr)
		}
		name = args[1]
	default:
		if c, ok := lookup(name); ok {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "statsblob: unknown command %q\n", name)
	usage(stderr)
	return 2
}

// flagSet is a subcommand's flag set with its help text.
type flagSet struct {
	*flag.FlagSet
	usage  string // "render [-format freeform|json] ... FILE..."
	about  string // what the command does, one or more paragraphs
	stdout io.Writer
	stderr io.Writer
}

// newFlags returns the flag set of a subcommand. usage is the synopsis
// after "statsblob " and must name every flag as the flag list does (a
// test checks); about is the description the help prints.
func newFlags(name, usage, about string, stdout, stderr io.Writer) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse errors are printed by parse, help by help
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, usage: usage, about: about, stdout: stdout, stderr: stderr}
}

// commonHelp ends every command's help, fileHelp that of commands that
// read files.
const (
	commonHelp = `
Flags take one or two dashes and may come before or after other arguments;
"--" ends the flags.
`
	fileHelp = `A file name "-" reads standard input.
`
)

// help prints the command's full help: synopsis, description, flags.
func (f *flagSet) help(w io.Writer) {
	fmt.Fprintf(w, "usage: statsblob %s\n\n%s", f.usage, f.about)
	n := 0
	f.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprint(w, "\nflags:\n")
		f.SetOutput(w)
		f.PrintDefaults()
		f.SetOutput(io.Discard)
	}
	fmt.Fprint(w, commonHelp)
	if strings.HasSuffix(f.usage, "FILE...") {
		fmt.Fprint(w, fileHelp)
	}
}

// parse parses args, flags interleaved with positional arguments, and
// returns the positional arguments, of which there must be at least
// minPos. If ok is false the command ends with code: 0 after -h (the help
// went to stdout), 2 after a usage error (the message and the synopsis went
// to stderr).
func (f *flagSet) parse(args []string, minPos int) (pos []string, code int, ok bool) {
	for {
		if err := f.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				f.help(f.stdout)
				return nil, 0, false
			}
			return nil, f.usageError("%v", err), false
		}
		rest := f.Args()
		if len(rest) == 0 {
			break
		}
		if f.endedByDashes(args[:len(args)-len(rest)]) {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if len(pos) < minPos {
		return nil, f.usageError("missing file arguments"), false
	}
	stdin := 0
	for _, p := range pos {
		if p == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return nil, f.usageError(`"-" (standard input) given %d times`, stdin), false
	}
	return pos, 0, true
}

// endedByDashes reports whether the flag arguments Parse consumed end with
// "--" (which ends the flags), rather than with a flag's value "--".
func (f *flagSet) endedByDashes(used []string) bool {
	for i := 0; i < len(used); i++ {
		tok := used[i]
		if tok == "--" {
			return true
		}
		name := strings.TrimPrefix(strings.TrimPrefix(tok, "-"), "-")
		if strings.Contains(name, "=") {
			continue
		}
		if fl := f.Lookup(name); fl != nil {
			if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
				i++ // the next argument is the flag's value
			}
		}
	}
	return false
}

// usageError prints a usage error and the synopsis to stderr and returns
// exit status 2.
func (f *flagSet) usageError(format string, a ...any) int {
	fmt.Fprintf(f.stderr, "statsblob %s: %s\n", f.Name(), fmt.Sprintf(format, a...))
	fmt.Fprintf(f.stderr, "usage: statsblob %s\nRun 'statsblob %s -h' for help.\n", f.usage, f.Name())
	return 2
}

// fail prints one error line to stderr, prefixed with the command's name.
// Multi-line errors (errors.Join) are joined with "; ".
func (f *flagSet) fail(err error) {
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	fmt.Fprintf(f.stderr, "statsblob %s: %s\n", f.Name(), msg)
}

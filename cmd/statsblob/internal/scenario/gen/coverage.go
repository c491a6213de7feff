package gen

import (
	"fmt"
	"io"
	"sort"
)

// The coverage cells. A cell is a string; Cells lists every cell the rules
// of FORMAT.md section 13 allow, and every cell the generator hits is one
// of them.

// specKinds are the stat spec kinds of a voi line: the numeric stats, the
// t-digests, and every histogram type x scheme x flags combination except
// USR with ubinf on CRHIST/DRHIST (section 13).
func specKinds() []string {
	kinds := []string{"SUM", "MAX", "MIN", "TDGSTCLUST32", "TDGSTCLUST64"}
	for hdt := dtCR32; hdt <= dtDV64; hdt++ {
		_, dv := histKind(hdt)
		for sch := range numSchemes {
			for f := range uint64(4) {
				if sch == schUsr && !dv && f&hfUBInf != 0 {
					continue
				}
				kinds = append(kinds, histKindName(hdt, sch, f))
			}
		}
	}
	return kinds
}

// qPrecs are the fractional bit counts requested precisions round to.
var qPrecs = []int{2, 4, 6, 8, 16, 32, 48, 64}

// valueCmds are the commands counted per VOI dtype and statistic kind:
// "update abs INT_S32 SUM" is an absolute update that reached the SUM of an
// INT_S32 VOI, "render Q_U64 DVHIST64" a rendering of a blob holding one.
var valueCmds = []string{"update abs", "update rel", "updates abs", "updates rel", "fetch", "fetch as", "visit", "render", "reset"}

// miscCells are the single cells: command variants and syntax forms.
var miscCells = []string{
	"tpl", "tpl duplicate name", "tpl name too long", "tpl name of 64 bytes", "usetpl",
	"voi added", "voi too big for a blob", "voi without stats", "voi two stats of one type", "voi stat args ignored",
	"voi sparse id", "voi negative id", "voi duplicate id", "voi huge id", "voi id truncated to int32", "voi long name",
	"voi dtype 0", "voi dtype 11..18", "voi dtype 19 or more", "voi tpl= current", "voi tpl= other", "voi tpl= unknown",
	"hist flags 0", "hist flags other bits", "hist negative step", "hist ub below lb", "hist bounds near max",
	"hist bounds near min", "hist usr lb:ub of one value", "hist usr unsorted", "hist Q bound high bits",
	"hist Q bounds near max", "hist Q bounds of two precisions", "hist Q huge step", "hist Q negative bounds",
	"blob", "blob default name", "blob with template",
	"init", "init fails", "init exact size", "init too small", "init under 64 bytes", "use",
	"update abs", "update rel", "update negative id", "update as the VOI's dtype", "update as a numeric dtype",
	"update as an invalid dtype", "updates over 40000", "t-digest past 65536 samples",
	"stream", "seed", "clock", "fetch", "fetch as", "fetch odd stat type",
	"snapshot", "snapshot reset", "clone", "clone_into", "clone_into reset", "clone_into fails",
	"clone_into exact size", "clone_into short buffer", "clone_into under 8 bytes",
	"destroy", "destroy failed buffer", "visit", "visit stop",
	"dump hex", "dump layout", "dump hex of a failed buffer", "dump layout of a failed buffer", "dump tplhex", "dump tpllayout",
	"tplhash", "tplspec", "tplid", "tplid unknown name", "tplid by hash", "tplid with a hash", "id2name", "id2name unknown id",
	"dice seeded", "dice unseeded", "dice slot=pct", "sizes", "echo",
	"literal named", "literal negative", "literal plus", "literal hex", "literal octal", "literal high bits",
	"literal Q raw", "literal Q named", "literal Q hex", "literal Q fraction", "literal Q negative",
	"syntax whitespace", "syntax comment", "syntax empty line", "syntax lower-case name", "syntax mixed-case name",
	"syntax dtype suffix ignored", "syntax dtype as number", "syntax Q precision with zeros", "syntax id with high bits",
}

func init() {
	for _, k := range renderKinds {
		miscCells = append(miscCells, "dump "+k)
	}
	for _, m := range []string{"abs", "rel"} {
		for _, d := range []string{"uniform", "logish", "signed", "mod"} {
			miscCells = append(miscCells, "updates "+m+" "+d)
		}
	}
}

// Cells returns every allowed coverage cell, in the order of the table.
func Cells() []string {
	var cells []string
	for _, k := range specKinds() {
		for _, d := range voiDTypes {
			cells = append(cells, "voi "+dtNames[d]+" "+k)
		}
	}
	for _, d := range voiDTypes {
		cells = append(cells, "voi "+dtNames[d]+" relupdate")
		if isQ(d) {
			for _, p := range qPrecs {
				cells = append(cells, fmt.Sprintf("voi %s /%d", dtNames[d], p))
			}
		}
	}
	for _, c := range valueCmds {
		for col := range numCols {
			for _, d := range voiDTypes {
				cells = append(cells, c+" "+dtNames[d]+" "+colNames[col])
			}
		}
	}
	return append(cells, miscCells...)
}

// Coverage generates the scenarios of seeds from..to (inclusive) and
// returns the cells they hit with their counts, and the number of commands.
func Coverage(from, to uint64, o Options) (hits map[string]int, commands int) {
	hits = map[string]int{}
	for s := from; ; s++ {
		sc := Generate(s, o)
		for c, n := range sc.Cover {
			hits[c] += n
		}
		for _, l := range sc.Lines {
			if len(Tokens(l)) > 0 {
				commands++
			}
		}
		if s == to {
			break
		}
	}
	return hits, commands
}

var shortDT = []string{"", "S32", "U32", "S64", "U64", "SLONG", "ULONG", "QS32", "QU32", "QS64", "QU64"}

// WriteCoverage prints the coverage table of hits: one matrix of VOI dtype
// by stat spec for voi lines, one of VOI dtype by statistic kind for each
// command that meets statistics, then the single cells. It returns the
// allowed cells not hit and the hit cells that are not allowed (a
// generator bug), both sorted.
func WriteCoverage(w io.Writer, hits map[string]int) (missing, unknown []string) {
	allowed := map[string]bool{}
	for _, c := range Cells() {
		allowed[c] = true
		if hits[c] == 0 {
			missing = append(missing, c)
		}
	}
	for c := range hits {
		if !allowed[c] {
			unknown = append(unknown, c)
		}
	}
	sort.Strings(unknown)
	matrix := func(title string, rows []string, cell func(row string, dt int) (string, bool)) {
		fmt.Fprintf(w, "\n%s\n%-26s", title, "")
		for _, d := range voiDTypes {
			fmt.Fprintf(w, " %7s", shortDT[d])
		}
		fmt.Fprintln(w)
		for _, r := range rows {
			fmt.Fprintf(w, "%-26s", r)
			for _, d := range voiDTypes {
				c, ok := cell(r, d)
				if !ok {
					fmt.Fprintf(w, " %7s", "-")
					continue
				}
				fmt.Fprintf(w, " %7d", hits[c])
			}
			fmt.Fprintln(w)
		}
	}
	rows := append(specKinds(), "relupdate")
	for _, p := range qPrecs {
		rows = append(rows, fmt.Sprintf("/%d", p))
	}
	matrix("voi lines: stat spec (rows) on VOIs of each dtype (columns)", rows, func(r string, d int) (string, bool) {
		if r[0] == '/' && !isQ(d) {
			return "", false
		}
		return "voi " + dtNames[d] + " " + r, true
	})
	for _, c := range valueCmds {
		matrix(c+": statistics met (rows) on VOIs of each dtype (columns)", colNames[:], func(r string, d int) (string, bool) {
			return c + " " + dtNames[d] + " " + r, true
		})
	}
	fmt.Fprintln(w, "\ncommand variants and syntax")
	for _, c := range miscCells {
		fmt.Fprintf(w, "  %7d  %s\n", hits[c], c)
	}
	min, minCell := -1, ""
	for _, c := range Cells() {
		if n := hits[c]; min < 0 || n < min {
			min, minCell = n, c
		}
	}
	fmt.Fprintf(w, "\n%d allowed cells, %d hit, %d not hit; fewest hits: %d (%s)\n",
		len(allowed), len(allowed)-len(missing), len(missing), min, minCell)
	for _, c := range missing {
		fmt.Fprintf(w, "not hit: %s\n", c)
	}
	for _, c := range unknown {
		fmt.Fprintf(w, "not an allowed cell (generator bug): %s\n", c)
	}
	return missing, unknown
}

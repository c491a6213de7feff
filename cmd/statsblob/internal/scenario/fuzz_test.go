package scenario_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/statsblob/statsblob/cmd/statsblob/internal/scenario"
)

// FuzzRun: any scenario text runs without a panic, and every line with a
// token is echoed, in order, before its results (the runner may stop early
// with an error, never before echoing the line it stopped on).
func FuzzRun(f *testing.F) {
	scns, _ := filepath.Glob(filepath.Join(confDir, "scenarios", "*.scn"))
	for _, s := range scns {
		if p, err := os.ReadFile(s); err == nil && len(p) < 2000 {
			f.Add(string(p))
		}
	}
	f.Add("tpl T\nvoi 0 v INT_U32 : SUM CRHIST32_LIN(0,10,1)\nblob\nupdate abs 0 5\ndump json_objdump_meta\n")
	f.Fuzz(func(t *testing.T, in string) {
		if len(in) > 4096 || strings.Contains(in, "updates") {
			return // long loops are not what this target looks for
		}
		var out bytes.Buffer
		err := scenario.Run(strings.NewReader(in), &out)
		echoed := 0
		for _, line := range strings.Split(in, "\n") {
			toks := scenario.Tokens(line)
			if len(toks) == 0 {
				continue
			}
			echo := ">" + " " + strings.Join(toks, " ") + "\n"
			i := strings.Index(out.String()[echoed:], echo)
			if i < 0 {
				if err != nil {
					return // stopped on an error before this line
				}
				t.Fatalf("line %q not echoed", line)
			}
			echoed += i + len(echo)
		}
	})
}

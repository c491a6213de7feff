package scenario_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/statsblob/statsblob/cmd/statsblob/internal/scenario"
)

const confDir = "../../../../testdata/conformance"

// pending reads testdata/conformance/PENDING: scenario names (without
// extension), one per line, each followed by the reason after a '#'.
func pending(t *testing.T) map[string]string {
	t.Helper()
	m := map[string]string{}
	f, err := os.Open(filepath.Join(confDir, "PENDING"))
	if os.IsNotExist(err) {
		return m
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, _ := strings.Cut(line, "#")
		m[strings.TrimSpace(name)] = strings.TrimSpace(reason)
	}
	return m
}

// TestConformance runs every public scenario and compares its output with
// the C reference's golden output byte for byte. Scenarios listed in
// PENDING must still fail (the list only shrinks).
func TestConformance(t *testing.T) {
	scns, err := filepath.Glob(filepath.Join(confDir, "scenarios", "*.scn"))
	if err != nil || len(scns) == 0 {
		t.Fatalf("no scenarios found: %v", err)
	}
	pend := pending(t)
	for _, scn := range scns {
		name := strings.TrimSuffix(filepath.Base(scn), ".scn")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want, err := os.ReadFile(filepath.Join(confDir, "golden", name+".out"))
			if err != nil {
				t.Fatal(err)
			}
			in, err := os.ReadFile(scn)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			runErr := func() (err error) {
				defer func() {
					if p := recover(); p != nil {
						err = fmt.Errorf("panic: %v", p)
					}
				}()
				return scenario.Run(bytes.NewReader(in), &got)
			}()
			ok := runErr == nil && bytes.Equal(got.Bytes(), want)
			reason, isPending := pend[name]
			switch {
			case ok && isPending:
				t.Fatalf("scenario passes but is listed in PENDING (%s): remove it from the list", reason)
			case !ok && isPending:
				t.Skipf("pending: %s", reason)
			case runErr != nil:
				t.Fatalf("run error: %v\n%s", runErr, firstDiff(got.String(), string(want)))
			case !ok:
				t.Fatalf("output differs from golden:\n%s", firstDiff(got.String(), string(want)))
			}
		})
	}
}

// firstDiff shows the first differing line with some context.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			var sb strings.Builder
			for j := max(0, i-3); j < i; j++ {
				fmt.Fprintf(&sb, "  %4d  %s\n", j+1, w[j])
			}
			fmt.Fprintf(&sb, "- %4d  %s\n+ %4d  %s\n", i+1, wl, i+1, gl)
			return sb.String()
		}
	}
	return "(identical)"
}

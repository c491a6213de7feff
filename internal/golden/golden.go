// Package golden reads the conformance scenario language and the golden
// outputs of the C reference (testdata/conformance/FORMAT.md): the golden
// files' command blocks and hex dumps, and the tokens a scenario line is
// made of (DTYPE, STYPE, Q literals, STAT specs). The conformance runner
// parses scenarios with it, and the hist and tdigest tests replay the
// goldens against their own packages with it, so the language is read in
// one place.
//
// It sits at the floor of the package map (README.md): it imports voi and
// internal/literal only, so that hist's internal tests can use it.
package golden

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
)

// Block is one command of a golden file: the echoed command line ("> "),
// split into tokens, and the lines the command printed.
type Block struct {
	Line int      // 1-based line number of the echo
	Tok  []string // the command's tokens
	Out  []string // the lines it printed, up to the next echo
}

// Blocks splits a golden file into its command blocks; lines before the
// first echo belong to none.
func Blocks(text []byte) []Block {
	var bs []Block
	s := bufio.NewScanner(bytes.NewReader(text))
	s.Buffer(make([]byte, 1<<20), 1<<24)
	for n := 1; s.Scan(); n++ {
		line := s.Text()
		if rest, ok := strings.CutPrefix(line, "> "); ok {
			bs = append(bs, Block{Line: n, Tok: strings.Fields(rest)})
			continue
		}
		if len(bs) > 0 {
			bs[len(bs)-1].Out = append(bs[len(bs)-1].Out, line)
		}
	}
	return bs
}

// ReadFile reads and splits the golden file at path.
func ReadFile(path string) ([]Block, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Blocks(b), nil
}

// Hex decodes the hex lines of a dump ("OOOO: xx xx ...", FORMAT.md 7.1);
// lines of another shape are skipped. Lines are taken in order: their
// offsets are not checked.
func Hex(lines []string) ([]byte, error) {
	var b []byte
	for _, l := range lines {
		off, rest, ok := strings.Cut(l, ":")
		if !ok || len(off) != 4 || strings.Trim(off, "0123456789abcdef") != "" {
			continue
		}
		x, err := hex.DecodeString(strings.ReplaceAll(rest, " ", ""))
		if err != nil {
			return nil, fmt.Errorf("golden: hex line %q: %w", l, err)
		}
		b = append(b, x...)
	}
	return b, nil
}

package gen

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// Tokens splits a scenario line into its tokens (FORMAT.md section 2).
func Tokens(line string) []string {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	return strings.FieldsFunc(line, func(c rune) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' })
}

// Echo returns the echo line a runner prints for a scenario line, without
// its line end, or "" for a line without tokens.
func Echo(line string) string {
	toks := Tokens(line)
	if len(toks) == 0 {
		return ""
	}
	return "> " + strings.Join(toks, " ")
}

// Blocks splits a runner's output into the output of each command of a
// scenario: by index in lines, the command's echo line and its results. A
// command whose echo line is not found where expected, and every later
// one, has no block (the runner stopped, or printed something else).
func Blocks(lines []string, out []byte) map[int][]byte {
	type cmd struct {
		i    int
		echo []byte
	}
	var cmds []cmd
	for i, l := range lines {
		if e := Echo(l); e != "" {
			cmds = append(cmds, cmd{i, []byte(e + "\n")})
		}
	}
	res := make(map[int][]byte, len(cmds))
	pos := 0
	for k, c := range cmds {
		if !bytes.HasPrefix(out[pos:], c.echo) {
			break
		}
		end := len(out)
		if k+1 < len(cmds) {
			// The next command's echo at the start of a line.
			next := append([]byte{'\n'}, cmds[k+1].echo...)
			j := bytes.Index(out[pos+len(c.echo)-1:], next)
			if j < 0 {
				res[c.i] = out[pos:]
				break
			}
			end = pos + len(c.echo) - 1 + j + 1
		}
		res[c.i] = out[pos:end]
		pos = end
	}
	return res
}

// Digests of runner outputs: the goldens of generated scenarios, kept
// without the C (testdata/conformance/generated/digests.txt). A seed's
// line is
//
//	SEED FULL N BLOCKS
//
// FULL is the first 16 hex digits of the SHA-256 of the whole output, N
// the number of commands whose output block was found, BLOCKS the first 3
// hex digits of the SHA-256 of each block, concatenated: with FULL enough
// to tell that an output differs and, but for a chance of 1 in 4096 per
// block, which command's output differs first.

// blockHex is the number of hex digits kept of each block's hash.
const blockHex = 3

// DigestHeader is the first line of a digests file.
func DigestHeader() string {
	return fmt.Sprintf("# statsblob gen digests, generator version %d: SEED SHA256/16 COMMANDS SHA256/3-per-command", Version)
}

// Digest is the digest of one scenario's output.
type Digest struct {
	Seed   uint64
	Full   string
	Blocks []string
}

// String returns the digest's line in a digests file.
func (d Digest) String() string {
	return fmt.Sprintf("%d %s %d %s", d.Seed, d.Full, len(d.Blocks), strings.Join(d.Blocks, ""))
}

// DigestOf computes the digest of the output of scenario lines.
func DigestOf(seed uint64, lines []string, out []byte) Digest {
	sum := sha256.Sum256(out)
	d := Digest{Seed: seed, Full: hex.EncodeToString(sum[:8])}
	blocks := Blocks(lines, out)
	for i := range lines {
		b, ok := blocks[i]
		if !ok {
			if Echo(lines[i]) != "" {
				break
			}
			continue
		}
		s := sha256.Sum256(b)
		d.Blocks = append(d.Blocks, hex.EncodeToString(s[:2])[:blockHex])
	}
	return d
}

// FirstDiff returns the index, among the commands, of the first command
// whose output block differs between two digests, or -1 if the blocks
// agree (the whole outputs may still differ after the last block found).
func FirstDiff(a, b Digest) int {
	for i := range max(len(a.Blocks), len(b.Blocks)) {
		if i >= len(a.Blocks) || i >= len(b.Blocks) || a.Blocks[i] != b.Blocks[i] {
			return i
		}
	}
	return -1
}

// ParseDigests reads a digests file: its generator version and its
// digests by seed.
func ParseDigests(r io.Reader) (version int, ds map[uint64]Digest, err error) {
	ds = map[uint64]Digest{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	version = -1
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if strings.HasPrefix(l, "#") {
			if _, err := fmt.Sscanf(l, "# statsblob gen digests, generator version %d:", &version); err != nil && n == 1 {
				return 0, nil, fmt.Errorf("digests line 1: not a digests header: %q", l)
			}
			continue
		}
		f := strings.Fields(l)
		if len(f) == 3 {
			f = append(f, "")
		}
		if len(f) != 4 {
			return 0, nil, fmt.Errorf("digests line %d: %d fields, want 4", n, len(f))
		}
		var d Digest
		var cnt int
		if _, err := fmt.Sscan(f[0], &d.Seed); err != nil {
			return 0, nil, fmt.Errorf("digests line %d: seed: %w", n, err)
		}
		if _, err := fmt.Sscan(f[2], &cnt); err != nil || len(f[3]) != blockHex*cnt || len(f[1]) != 16 {
			return 0, nil, fmt.Errorf("digests line %d: malformed digest", n)
		}
		d.Full = f[1]
		for i := 0; i < cnt; i++ {
			d.Blocks = append(d.Blocks, f[3][blockHex*i:blockHex*i+blockHex])
		}
		ds[d.Seed] = d
	}
	if err := sc.Err(); err != nil {
		return 0, nil, err
	}
	if version < 0 {
		return 0, nil, fmt.Errorf("digests: no header")
	}
	return version, ds, nil
}

// Commands returns the indexes in lines of the lines with tokens.
func Commands(lines []string) []int {
	var idx []int
	for i, l := range lines {
		if len(Tokens(l)) > 0 {
			idx = append(idx, i)
		}
	}
	return idx
}

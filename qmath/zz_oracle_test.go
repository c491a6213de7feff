package qmath

// TEMPORARY: differential test against the scratch C oracle in /tmp/qref.
// Not part of the deliverable; removed before finishing.

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func errCode(err error) int {
	switch err {
	case nil:
		return 0
	case ErrOverflow:
		return 75
	case ErrRange:
		return 34
	case ErrInvalid:
		return 22
	}
	return -1
}

func rndBits(r *rand.Rand) uint64 {
	switch r.IntN(6) {
	case 0:
		return []uint64{0, 1, 2, 7, 8, 0x7fffffff, 0x80000000, 0xffffffff, 1 << 32, 0x7fffffffffffffff, 1 << 63, math.MaxUint64, 0xffffffff80000000, 0xfffffffffffffff8}[r.IntN(14)]
	case 1:
		return -uint64(r.IntN(100))
	default:
		n := r.IntN(65)
		v := r.Uint64()
		if n < 64 {
			v &= 1<<n - 1
		}
		if r.IntN(3) == 0 {
			v = -v
		}
		return v
	}
}

func rndQ(r *rand.Rand, k Kind) Q {
	v := rndBits(r)
	if r.IntN(2) == 0 {
		// small magnitude with random ctrl and sign
		v = (uint64(r.IntN(1<<uint(r.IntN(40)))) << 3) | uint64(r.IntN(8))
		if r.IntN(2) == 0 {
			v |= 1 << (k.Bits() - 1)
		}
	}
	return New(k, v)
}

func rndInt(r *rand.Rand, t int) Int {
	v := rndBits(r)
	if r.IntN(2) == 0 {
		v = uint64(r.IntN(1 << uint(r.IntN(20))))
		if r.IntN(3) == 0 {
			v = -v
		}
	}
	return ctype(t).toInt(v)
}

func (t ctype) toInt(v uint64) Int { return Kind(t).Int(v) }

func TestOracle(t *testing.T) {
	bin := os.Getenv("QORACLE")
	if bin == "" {
		t.Skip("QORACLE not set")
	}
	r := rand.New(rand.NewPCG(uint64(len(os.Getenv("QSEED"))+7), uint64(len(bin))))
	var in bytes.Buffer
	type tc struct {
		line string
		want func() string
	}
	var cases []tc
	n := 300000
	for range n {
		ka, kb := Kind(r.IntN(4)), Kind(r.IntN(4))
		a, b := rndQ(r, ka), rndQ(r, kb)
		if r.IntN(2) == 0 {
			b = b.WithCtrl(a.Ctrl())
		}
		ti, td := r.IntN(4), r.IntN(4)
		i, d := rndInt(r, ti), rndInt(r, td)
		switch op := r.IntN(16); op {
		case 0, 1, 2, 3, 4, 5:
			name := []string{"addq", "subq", "mulq", "divq", "cpyvalq", "cloneq"}[op]
			line := fmt.Sprintf("qq %s %d %x %d %x", name, ka, a.Raw, kb, b.Raw)
			cases = append(cases, tc{line, func() string {
				var q Q
				var err error
				switch name {
				case "addq":
					q, err = a.AddQ(b)
				case "subq":
					q, err = a.SubQ(b)
				case "mulq":
					q, err = a.MulQ(b)
				case "divq":
					q, err = a.DivQ(b)
				case "cpyvalq":
					q, err = a.CpyValQ(b)
				case "cloneq":
					q, err = CloneQ(ka, b)
					if err != nil {
						q = a
					}
				}
				return fmt.Sprintf("%x %d", q.Raw, errCode(err))
			}})
		case 6:
			line := fmt.Sprintf("qq cmp %d %x %d %x", ka, a.Raw, kb, b.Raw)
			cases = append(cases, tc{line, func() string {
				bi := func(b bool) int {
					if b {
						return 1
					}
					return 0
				}
				return fmt.Sprintf("%d %d %d %d %d", bi(a.LT(b)), bi(a.LE(b)), bi(a.GT(b)), bi(a.GE(b)), bi(a.EQ(b)))
			}})
		case 7, 8, 9, 10, 11, 12:
			name := []string{"addi", "subi", "muli", "divi", "cpyvali", "sifval"}[op-7]
			line := fmt.Sprintf("qi %s %d %x %d %x", name, ka, a.Raw, ti, i.V)
			cases = append(cases, tc{line, func() string {
				var q Q
				var err error
				switch name {
				case "addi":
					q, err = a.AddI(i)
				case "subi":
					q, err = a.SubI(i)
				case "muli":
					q, err = a.MulI(i)
				case "divi":
					q, err = a.DivI(i)
				case "cpyvali":
					q, err = a.CpyValI(i)
				case "sifval":
					q = a.SetIFVal(i)
				}
				return fmt.Sprintf("%x %d", q.Raw, errCode(err))
			}})
		case 13:
			line := fmt.Sprintf("qf %d %x %d %x %d %x", ka, a.Raw, ti, i.V, td, d.V)
			cases = append(cases, tc{line, func() string {
				q, err := a.FracI(i, d)
				return fmt.Sprintf("%x %d", q.Raw, errCode(err))
			}})
		case 14:
			line := fmt.Sprintf("q1 %d %x", ka, a.Raw)
			cases = append(cases, tc{line, func() string {
				return fmt.Sprintf("%s %x %x %x %x %x %x %d %d %s", a.String(), a.IntVal(), a.FracVal(), a.IFVal(), a.Abs().Raw,
					IFMaxVal(ka), IFMinVal(ka), a.NFBits(), map[bool]int{false: 0, true: 1}[a.IsNeg()], cHexFloat(a.Float64()))
			}})
		case 15:
			iv := int64(rndBits(r))
			prec := r.IntN(70) - 2
			line := fmt.Sprintf("ini %d %d %d", ka, iv, prec)
			cases = append(cases, tc{line, func() string { return fmt.Sprintf("%x", Ini(ka, iv, prec).Raw) }})
		}
	}
	for _, c := range cases {
		in.WriteString(c.line + "\n")
	}
	if os.Getenv("QDUMP") != "" {
		os.WriteFile(os.Getenv("QDUMP"), in.Bytes(), 0o644)
	}
	cmd := exec.Command(bin)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	fails, traps := 0, 0
	for k := 0; sc.Scan(); k++ {
		got := sc.Text()
		if got == "TRAP" {
			traps++
			if traps < 5 {
				t.Logf("trap: %s -> go %s", cases[k].line, cases[k].want())
			}
			continue
		}
		if ub(cases[k].line) {
			continue
		}
		if w := cases[k].want(); w != got {
			fails++
			if fails < 40 {
				t.Errorf("%s: C %q Go %q", cases[k].line, got, w)
			}
		}
	}
	t.Logf("%d cases, %d traps, %d fails", len(cases), traps, fails)
}

// cHexFloat formats like C's %a.
func cHexFloat(f float64) string {
	if f == 0 {
		if math.Signbit(f) {
			return "-0x0p+0"
		}
		return "0x0p+0"
	}
	s := fmt.Sprintf("%x", f) // Go: 0x1.8p+00
	s = strings.Replace(s, "p+0", "p+", 1)
	s = strings.Replace(s, "p-0", "p-", 1)
	if strings.HasSuffix(s, "p+") {
		s += "0"
	}
	return s
}

// ub reports lines whose C shifts by the full width (undefined behaviour).
func ub(line string) bool {
	var k int
	var raw uint64
	var iv int64
	var prec int
	if n, _ := fmt.Sscanf(line, "ini %d %d %d", &k, &iv, &prec); n == 3 {
		ctrl := uint64(int64(CtrlIni(prec))) & 7
		return !Kind(k).Signed() && New(Kind(k), ctrl).NFBits() == Kind(k).Bits()-3 && iv != 0
	}
	if n, _ := fmt.Sscanf(line, "qf %d %x", &k, &raw); n == 2 {
		return k == 3 && New(U64, raw).NFBits() == 61
	}
	return false
}

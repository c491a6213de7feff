package scenario

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/statsblob/statsblob/internal/literal"
	"github.com/statsblob/statsblob/voi"
)

// errSyntax marks a malformed scenario line.
var errSyntax = literal.ErrSyntax

// parseInt reads an INT literal (FORMAT.md 3.1).
func parseInt(tok string) (uint64, error) { return literal.Int(tok) }

// atoi is C atoi: optional sign, leading decimal digits, 0 if none.
func atoi(s string) int {
	i, neg := 0, false
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	var v int32
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		v = v*10 + int32(s[i]-'0')
	}
	if neg {
		v = -v
	}
	return int(v)
}

// dtypeTok is a parsed DTYPE token (FORMAT.md 3.3): the dtype number (any
// int) and, for Q types, the precision P.
type dtypeTok struct {
	n    int
	prec int
}

func (d dtypeTok) name() string {
	if d.n >= 0 && d.n < int(voi.NumDTypes) {
		return voi.DType(d.n).String()
	}
	return "dtype(" + strconv.Itoa(d.n) + ")"
}

// engine returns the dtype as the engine sees it; numbers that name no
// data type become one that does not either.
func (d dtypeTok) engine() voi.DType {
	if d.n >= 0 && d.n < int(voi.NumDTypes) {
		return voi.DType(d.n)
	}
	return voi.NumDTypes
}

func parseDType(tok string) (dtypeTok, error) {
	name, rest, hasSlash := strings.Cut(tok, "/")
	if dt, ok := voi.ParseDType(name); ok && dt != voi.VoiState {
		d := dtypeTok{n: int(dt)}
		if dt.IsQ() {
			if !hasSlash {
				return d, fmt.Errorf("%w: Q dtype %q without /P", errSyntax, tok)
			}
			d.prec = atoi(rest)
		}
		return d, nil
	}
	v, err := parseInt(tok)
	if err != nil {
		return dtypeTok{}, err
	}
	return dtypeTok{n: int(int32(v))}, nil
}

// parseSType reads a STYPE token (FORMAT.md 3.4).
func parseSType(tok string) (int, error) {
	if st, ok := voi.ParseSType(tok); ok {
		return int(st), nil
	}
	if tok != "" && (tok[0] == '-' || tok[0] >= '0' && tok[0] <= '9') {
		return atoi(tok), nil
	}
	return 0, fmt.Errorf("%w: stat type %q", errSyntax, tok)
}

// qGeometry returns the control bits and fractional bit count of a Q of
// dtype dt with requested precision prec (FORMAT.md 3.2 step 1).
func qGeometry(dt voi.DType, prec int) (ctrl uint64, nf uint, w uint, signed bool) {
	var ci int
	if prec <= 8 {
		ci = (prec - 1) >> 1
	} else {
		ci = 4 | ((prec - 1) >> 4)
	}
	ctrl = uint64(ci & 7)
	nfc := uint((ctrl&3)+1) << 1
	if ctrl&4 != 0 {
		nfc = uint((ctrl&3)+1) << 4
	}
	w = 64
	if dt.Is32() {
		w = 32
	}
	signed = dt.Signed()
	maxnf := w - 3
	if signed {
		maxnf--
	}
	return ctrl, min(nfc, maxnf), w, signed
}

// qStore turns a combined integer/fraction value into the raw bits of a Q
// (FORMAT.md 3.2 step 3).
func qStore(ifv uint64, ctrl uint64, w uint, signed bool) uint64 {
	mask := ^uint64(0) >> (64 - w)
	v := ifv & mask
	if !signed {
		return (ctrl | v<<3) & mask
	}
	neg := v>>(w-1) != 0
	mag := v
	if neg {
		mag = -v & mask
	}
	raw := (ctrl | mag<<3) & mask
	if neg {
		raw |= 1 << (w - 1)
	}
	return raw
}

// parseQ builds a Q value of dtype dt, precision prec from literal lit
// (FORMAT.md 3.2).
func parseQ(dt voi.DType, prec int, lit string) (uint64, error) {
	ctrl, nf, w, signed := qGeometry(dt, prec)
	var ifv uint64
	if r, ok := strings.CutPrefix(lit, "raw:"); ok {
		v, err := parseInt(r)
		if err != nil {
			return 0, err
		}
		ifv = v
	} else {
		s, neg := strings.CutPrefix(lit, "-")
		ip, fp, _ := strings.Cut(s, ".")
		if ip == "" || len(fp) > 18 {
			return 0, fmt.Errorf("%w: Q literal %q", errSyntax, lit)
		}
		i, err := parseInt(ip)
		if err != nil {
			return 0, err
		}
		var f, d uint64 = 0, 1
		for _, c := range []byte(fp) {
			if c < '0' || c > '9' {
				return 0, fmt.Errorf("%w: Q literal %q", errSyntax, lit)
			}
			f, d = f*10+uint64(c-'0'), d*10
		}
		// floor(f * 2^nf / d), exactly: f < d <= 10^18, so the quotient fits.
		q, _ := bits.Div64(f>>(64-nf), f<<nf, d)
		ifv = i<<nf + q
		if neg {
			ifv = -ifv
		}
	}
	return qStore(ifv, ctrl, w, signed), nil
}

// qFromInt is the Q of `updates` values: ifv = x << nf (FORMAT.md 6.8).
func qFromInt(dt voi.DType, prec int, x uint64) uint64 {
	ctrl, nf, w, signed := qGeometry(dt, prec)
	return qStore(x<<nf, ctrl, w, signed)
}

// rc formats an engine result (FORMAT.md 4).
func rc(errno int) string {
	switch {
	case errno == 0:
		return "OK"
	case errno > 0:
		return fmt.Sprintf("%s(fbsd=%d)", voi.ErrnoName(errno), errno)
	}
	return fmt.Sprintf("-%s(fbsd=%d)", voi.ErrnoName(-errno), errno)
}

func rcErr(err error) string {
	if n := voi.Errno(err); n >= 0 {
		return rc(n)
	}
	return "E?(fbsd=-1)"
}

package golden

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/statsblob/statsblob/internal/literal"
	"github.com/statsblob/statsblob/voi"
)

// ErrSyntax marks a malformed token; it is literal.ErrSyntax.
var ErrSyntax = literal.ErrSyntax

// DType is a DTYPE token (FORMAT.md 3.3): a data type number, which may
// name no type, and for Q types the requested precision P.
type DType struct {
	N    int
	Prec int
}

// ParseDType reads a DTYPE token: a type name (Q types with "/P") or an
// INT literal.
func ParseDType(tok string) (DType, error) {
	name, rest, hasSlash := strings.Cut(tok, "/")
	if dt, ok := voi.ParseDType(name); ok && dt != voi.VoiState {
		d := DType{N: int(dt)}
		if dt.IsQ() {
			if !hasSlash {
				return d, fmt.Errorf("%w: Q dtype %q without /P", ErrSyntax, tok)
			}
			d.Prec = Atoi(rest)
		}
		return d, nil
	}
	v, err := literal.Int(tok)
	if err != nil {
		return DType{}, err
	}
	return DType{N: int(int32(v))}, nil
}

// Name returns the type's name, or "dtype(N)" for a number that names
// none.
func (d DType) Name() string {
	if d.N >= 0 && d.N < int(voi.NumDTypes) {
		return voi.DType(d.N).String()
	}
	return "dtype(" + strconv.Itoa(d.N) + ")"
}

// Engine returns the data type as the engine sees it: a number that names
// no type becomes voi.NumDTypes, which names none either.
func (d DType) Engine() voi.DType {
	if d.N >= 0 && d.N < int(voi.NumDTypes) {
		return voi.DType(d.N)
	}
	return voi.NumDTypes
}

// ParseSType reads an STYPE token (FORMAT.md 3.4): a statistic name or a
// number (C atoi).
func ParseSType(tok string) (int, error) {
	if st, ok := voi.ParseSType(tok); ok {
		return int(st), nil
	}
	if tok != "" && (tok[0] == '-' || tok[0] >= '0' && tok[0] <= '9') {
		return Atoi(tok), nil
	}
	return 0, fmt.Errorf("%w: stat type %q", ErrSyntax, tok)
}

// Atoi is C atoi: optional sign, leading decimal digits, 0 if none; the
// value wraps as a C int.
func Atoi(s string) int {
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

// qGeometry returns the control bits and fractional bit count of a Q of
// type dt with requested precision prec (FORMAT.md 3.2 step 1), the
// storage width and whether it is signed.
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

// Q returns the raw bits of the Q value of type dt, precision prec, that
// the literal lit denotes (FORMAT.md 3.2): "[-]INT[.FRAC]" (the fraction
// truncated to the precision) or "raw:INT" (the combined
// integer/fraction value).
func Q(dt voi.DType, prec int, lit string) (uint64, error) {
	ctrl, nf, w, signed := qGeometry(dt, prec)
	var ifv uint64
	if r, ok := strings.CutPrefix(lit, "raw:"); ok {
		v, err := literal.Int(r)
		if err != nil {
			return 0, err
		}
		ifv = v
	} else {
		s, neg := strings.CutPrefix(lit, "-")
		ip, fp, _ := strings.Cut(s, ".")
		if ip == "" || len(fp) > 18 {
			return 0, fmt.Errorf("%w: Q literal %q", ErrSyntax, lit)
		}
		i, err := literal.Int(ip)
		if err != nil {
			return 0, err
		}
		var f, d uint64 = 0, 1
		for _, c := range []byte(fp) {
			if c < '0' || c > '9' {
				return 0, fmt.Errorf("%w: Q literal %q", ErrSyntax, lit)
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

// QFromInt is the Q value of type dt, precision prec, of an `updates`
// value x: ifv = x << nf (FORMAT.md 6.8).
func QFromInt(dt voi.DType, prec int, x uint64) uint64 {
	ctrl, nf, w, signed := qGeometry(dt, prec)
	return qStore(x<<nf, ctrl, w, signed)
}

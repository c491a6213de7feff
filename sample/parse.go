package sample

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Limits of the C's parser, fixed by its buffer sizes.
const (
	// specWidth is the longest template spec a pair may have: the C reads
	// it with "%76[^=]" into a buffer of STATS_TPL_MAX_STR_SPEC_LEN
	// (TPL_MAX_NAME_LEN + 13 = 77) bytes, one of them the NUL.
	specWidth = 76
	// nameWidth is the longest name part of a spec: "%65[^:]" into a
	// buffer of TPL_MAX_NAME_LEN + 2 (quotes) = 66 bytes.
	nameWidth = 65
	// numWidth is the longest number the kernel's sscanf reads for %u,
	// sign and leading zeros included: its conversion buffer is 32 bytes.
	numWidth = 31
	// maxPct is the largest cumulative percentage of a list.
	maxPct = 100
)

// Parse parses a rates list as writing a subsystem's sample-rates sysctl
// does (stats_tpl_sample_rates), resolving templates in reg (a nil reg
// holds none). It returns the list (nil for an empty one) or an error
// prefixed "sample: " that wraps voi.ErrInvalid for malformed text or a
// cumulative percentage above 100, or voi.ErrNoTemplate (the C's ESRCH)
// when a spec names no registered template.
//
// The text is a comma-separated list of pairs SPEC=PCT, each SPEC one of
//
//	NAME   "NAME"   NAME:HASH   "NAME":HASH   :HASH
//
// (NAME matches a template name exactly, HASH its current hash, a HASH of
// 0 or none matches any; :HASH alone finds the newest template with that
// hash), PCT a decimal percentage. Pairs are checked in order: shape, then
// the running percentage, then the template; the first failure decides
// the error. Text left over after the last pair is invalid.
//
// The C reads each pair with the kernel's sscanf: " %76[^=]=%u %n" for the
// pair, then "%65[^:]:%u", or ":%u" when the spec starts with ':'. Parse
// reproduces what that accepts, including these quirks:
//
//   - Whitespace (space, \t, \n, \v, \f, \r) is skipped before a pair,
//     after '=' and after PCT (so "a=10 , b=20" is fine), and after the
//     ':' of a hash. Whitespace between NAME and '=' or ':' belongs to the
//     name: "a = 10" looks for a template named "a ".
//   - A number (%u) is an optional '+' or '-' and decimal digits, at most
//     31 characters in all (the kernel's buffer); characters beyond that
//     stay in the input, which makes a longer PCT invalid (leftover text)
//     and cuts a longer HASH. Its value is computed as strtouq does (a '-'
//     negates modulo 2^64, anything above 2^64-1 becomes 2^64-1) and then
//     cut to 32 bits: "+7" is 7, "-0" is 0, "4294967306" is 10, "-5" is
//     4294967291 (and so over 100).
//   - A spec longer than 76 bytes is invalid. A name part longer than 65
//     bytes is cut to 65 and the rest of the spec ignored, so only a
//     quoted 64-byte name can still match. A consequence the C shares: the
//     printed spec of a template with a 64-byte name and a 10-digit hash
//     is 77 bytes and cannot be read back.
//   - One double quote is removed at each end of NAME, independently:
//     `"a"`, `"a` and `a"` all mean a. A NAME that is empty after that
//     (`""`, `"`) means "by hash", like :HASH.
//   - After NAME, a ':' not followed by a number leaves the hash at 0
//     (any), and whatever follows the hash's digits inside the spec is
//     ignored: "a:=10" and "a:5x=10" are accepted.
//   - A NUL byte ends the text the C sees, so the rest counts as leftover
//     text: invalid. Empty or all-whitespace text is the empty list.
//   - A trailing comma is accepted ("a=10,"); a comma followed by only
//     whitespace is not. An empty item before a comma becomes part of the
//     next name (",a=10" looks for ",a": voi.ErrNoTemplate).
//   - Duplicate templates and 0% entries are kept.
//
// One deliberate difference: the C sums percentages in a uint32_t, so a
// later huge ("negative") percentage can wrap the sum back to 100 or less
// and be accepted ("a=1,b=-1" gives a 4294967295% entry). Parse sums
// exactly and rejects that; every list it returns has percentages 0..100
// that add up to at most 100.
func Parse(reg *tpl.Registry, text string) ([]Rate, error) {
	in := text
	if i := strings.IndexByte(in, 0); i >= 0 {
		in = in[:i] // all the C's string functions see
	}
	var (
		rates []Rate
		cum   uint64
	)
	p := skipSpace(in, 0)
	for p < len(in) {
		spec, pct, next, ok := scanPair(in, p)
		if !ok {
			return nil, malformed(p, "want SPEC=PCT")
		}
		name, hash, ok := scanSpec(spec)
		if !ok {
			return nil, malformed(p, fmt.Sprintf("spec %q is neither NAME[:HASH] nor :HASH", spec))
		}
		if cum += uint64(pct); cum > maxPct {
			return nil, malformed(p, fmt.Sprintf("cumulative percentage %d exceeds %d", cum, maxPct))
		}
		id, err := lookup(reg, unquote(name), hash)
		if err != nil {
			return nil, fmt.Errorf("sample: rates, byte %d: %w", p, err)
		}
		rates = append(rates, Rate{TplID: int32(id), Pct: pct})
		p = next
		if p >= len(in) || in[p] != ',' {
			break
		}
		p++
	}
	if p < len(text) {
		return nil, malformed(p, fmt.Sprintf("unexpected %q", clip(text[p:])))
	}
	return rates, nil
}

// AppendRates appends rates to dst as reading the sysctl prints them:
// `"NAME":HASH=PCT` per rate, with the template's current name and hash in
// reg, joined by commas; nothing for no rates. It
// fails, wrapping voi.ErrNotFound, if a TplID is not in reg.
func AppendRates(dst []byte, reg *tpl.Registry, rates []Rate) ([]byte, error) {
	for i, r := range rates {
		t, err := reg.ByID(int(r.TplID))
		if err != nil {
			return dst, fmt.Errorf("sample: rate %d: %w", i, err)
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = append(dst, t.Name()...)
		dst = append(dst, '"', ':')
		dst = strconv.AppendUint(dst, uint64(t.Hash()), 10)
		dst = append(dst, '=')
		dst = strconv.AppendUint(dst, uint64(r.Pct), 10)
	}
	return dst, nil
}

func malformed(pos int, why string) error {
	return fmt.Errorf("sample: rates, byte %d: %s: %w", pos, why, voi.ErrInvalid)
}

// clip shortens leftover text for an error message.
func clip(s string) string {
	if len(s) > 20 {
		return s[:20] + "..."
	}
	return s
}

// lookup is stats_tpl_fetch_allocid: by name (and hash, 0 = any) when
// there is a name, else by hash alone.
func lookup(reg *tpl.Registry, name string, hash uint32) (int, error) {
	if name == "" {
		return reg.LookupHash(hash)
	}
	return reg.LookupName(name, hash)
}

// unquote removes one '"' from the end, then one from the start, as the C
// strips "surrounding" quotes.
func unquote(name string) string {
	name = strings.TrimSuffix(name, `"`)
	return strings.TrimPrefix(name, `"`)
}

// isSpace is the kernel's isspace(): ' ' and '\t' through '\r'.
func isSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

// scanPair is sscanf(s[p:], " %76[^=]=%u %n", spec, &pct, &off) == 2: it
// returns the spec, the percentage and the index just past the pair and
// the whitespace after it.
func scanPair(s string, p int) (spec string, pct uint32, next int, ok bool) {
	i := skipSpace(s, p)
	j := scanSet(s, i, '=', specWidth)
	if j == i || j >= len(s) || s[j] != '=' {
		return "", 0, 0, false
	}
	pct, k, ok := scanU(s, j+1)
	if !ok {
		return "", 0, 0, false
	}
	return s[i:j], pct, skipSpace(s, k), true
}

// scanSpec reads a template spec as the C does: sscanf(spec, "%65[^:]:%u",
// name, &hash) >= 1, or else sscanf(spec, ":%u", &hash) == 1. The hash is
// 0 when absent; ok is false when neither form matches.
func scanSpec(spec string) (name string, hash uint32, ok bool) {
	if j := scanSet(spec, 0, ':', nameWidth); j > 0 {
		// The literal ':' (the name may have been cut at 65 bytes before
		// it), then %u; without both the hash stays 0 and the rest of the
		// spec is ignored.
		if j < len(spec) && spec[j] == ':' {
			if h, _, ok := scanU(spec, j+1); ok {
				hash = h
			}
		}
		return spec[:j], hash, true
	}
	// The spec is not empty (%76[^=] matched), so it starts with ':'.
	hash, _, ok = scanU(spec, 1)
	return "", hash, ok
}

// scanSet is the %<width>[^stop] conversion starting at s[i]: it returns
// the end of the longest run of at most width bytes other than stop. The
// caller treats an empty run as a matching failure.
func scanSet(s string, i int, stop byte, width int) int {
	j := i
	for j < len(s) && j-i < width && s[j] != stop {
		j++
	}
	return j
}

// scanU is the kernel sscanf's %u at s[i:]: leading whitespace, then at
// most numWidth characters of an optional sign and decimal digits, at
// least one digit. It returns the value cut to 32 bits, the index after
// the number, and whether a number was there.
func scanU(s string, i int) (uint32, int, bool) {
	i = skipSpace(s, i)
	start := i
	signOK, digits := true, false
scan:
	for ; i < len(s) && i-start < numWidth; i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits, signOK = true, false
		case (c == '+' || c == '-') && signOK:
			signOK = false
		default:
			break scan
		}
	}
	if !digits {
		return 0, start, false
	}
	return uint32(strtouq(s[start:i])), i, true
}

// strtouq is the kernel's strtouq(s, NULL, 10) for s = [sign]digits: the
// magnitude saturates at 2^64-1 on overflow (sign ignored then), otherwise
// a '-' negates it modulo 2^64.
func strtouq(s string) uint64 {
	neg := false
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		s = s[1:]
	}
	var acc uint64
	for i := 0; i < len(s); i++ {
		d := uint64(s[i] - '0')
		if acc > (math.MaxUint64-d)/10 {
			return math.MaxUint64
		}
		acc = acc*10 + d
	}
	if neg {
		acc = -acc
	}
	return acc
}

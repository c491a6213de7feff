package tdigest

import (
	"github.com/statsblob/statsblob/internal/decimal"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/voi"
)

// AppendText appends the C's rendering of digest data of type dt
// (stats_voistatdata_tdgst_tostr), freeform or, if json is set, JSON: the
// header counters, then one "{mu=..,cnt=..}" per centroid, in mean order from the head's cached
// minimum (which the C trusts even when it is stale), or with objdump every
// slot in index order, prefixed with its index. Each mean is rendered with
// its own Q type (defect 6 fixed) in a text buffer sized, as in the C, by
// the first centroid's Q_MAXSTRLEN (with defect 1d's extra byte); a mean
// whose text would not fit renders as the empty string. Bytes that are not
// a digest of type dt render as nothing, as the C's default case.
func AppendText(dst, data []byte, dt voi.DType, json, objdump bool) []byte {
	info, err := ReadInfo(data, dt)
	if err != nil {
		return dst
	}
	order := CachedOrder
	if objdump {
		order = SlotOrder
	}
	it, err := Iter(data, dt, order)
	if json {
		dst = append(dst, `"smplcnt":`...)
	} else {
		dst = append(dst, "smplcnt="...)
	}
	dst = decimal.AppendUint(dst, info.SmplCnt)
	if json {
		dst = append(dst, `,"compcnt":`...)
	} else {
		dst = append(dst, ", compcnt="...)
	}
	dst = decimal.AppendUint(dst, uint64(info.CompCnt))
	if json {
		dst = append(dst, `,"maxctds":`...)
	} else {
		dst = append(dst, ", maxctds="...)
	}
	dst = decimal.AppendUint(dst, uint64(uint16(info.MaxNodes)))
	if json {
		dst = append(dst, `,"nctds":`...)
	} else {
		dst = append(dst, ", nctds="...)
	}
	dst = decimal.AppendUint(dst, uint64(uint16(info.CurNodes)))
	if json {
		dst = append(dst, `,"ctds":[`...)
	}
	if err == nil {
		t := &it.t
		kind := qmath.S64
		if t.is32 {
			kind = qmath.S32
		}
		more := it.Next()
		bufLen := 0
		for first := true; more; first = false {
			i := it.cur // the rendering needs no links
			mu := qmath.Q{Raw: t.muRaw(i), Kind: kind}
			count := uint64(t.cnt(i))
			if t.is32 {
				count = uint64(uint32(count))
			}
			if first {
				bufLen = qMaxStrLen(mu)
			}
			if json {
				dst = append(dst, '{')
				if objdump {
					dst = append(dst, `"ctd":`...)
					dst = decimal.AppendUint(dst, uint64(uint16(i)))
					dst = append(dst, ',')
				}
				dst = append(dst, `"mu":`...)
			} else {
				dst = append(dst, "\n\t\t\t\t"...)
				if objdump {
					dst = append(dst, "ctd["...)
					dst = decimal.AppendUint(dst, uint64(uint16(i)))
					dst = append(dst, "]."...)
				}
				dst = append(dst, "{mu="...)
			}
			n := len(dst)
			if dst = appendMean(dst, mu.Raw, t.is32); len(dst)-n+1 > bufLen {
				dst = dst[:n] // Q_TOSTR fails: the C appends an empty string
			}
			if json {
				dst = append(dst, `,"cnt":`...)
			} else {
				dst = append(dst, ",cnt="...)
			}
			dst = decimal.AppendUint(dst, count)
			dst = append(dst, '}')
			if objdump {
				more = it.Next()
			} else {
				more = it.nextInOrder()
			}
			if more && json {
				dst = append(dst, ',')
			}
		}
	}
	if json {
		dst = append(dst, ']')
	}
	return dst
}

// nextInOrder is Next for CachedOrder and MeanOrder after the first
// centroid: the successor walk of tree.next (the C's ARB_NEXT, with its
// bounds on corrupt links) on the link words directly.
func (it *Iterator) nextInOrder() bool {
	t := &it.t
	if it.steps > t.maxn || it.cur == null {
		return false
	}
	it.steps++
	nodes, nsz, maxn := t.nodes, t.nsz, t.maxn
	mx := uint(maxn)
	links := func(i int) uint64 { return le.Uint64(nodes[i*nsz:]) }
	e := it.cur
	lk := links(e)
	if r := lkRight(lk); uint(r) < mx {
		e = r
		for n := 0; n < maxn; n++ {
			l := lkLeft(links(e))
			if uint(l) >= mx {
				break
			}
			e = l
		}
		it.cur = e
		return true
	}
	p := lkParent(lk)
	if uint(p) >= mx {
		it.cur = null
		return false
	}
	plk := links(p)
	if lkLeft(plk) != e {
		for n := 0; lkRight(plk) == e && n < maxn; n++ {
			e, p = p, lkParent(plk)
			if uint(p) >= mx {
				it.cur = null
				return false
			}
			plk = links(p)
		}
	}
	it.cur = p
	return true
}

// appendMean appends the text of a centroid's mean, the raw bits of an
// s32q (is32) or s64q: qmath.Q.AppendText for those two kinds, without its
// generic steps (TestAppendMeanMatchesQ).
func appendMean(dst []byte, raw uint64, is32 bool) []byte {
	var mag uint64
	var nf uint
	var neg bool
	if is32 {
		r := uint32(raw)
		neg, mag, nf = int32(r) < 0, uint64(r&0x7FFF_FFF8)>>3, nfS32(raw)
	} else {
		neg, mag, nf = int64(raw) < 0, (raw&0x7FFF_FFFF_FFFF_FFF8)>>3, nfS64(raw)
	}
	if nf > decimal.MaxFracBits {
		kind := qmath.S64
		if is32 {
			kind = qmath.S32
		}
		return qmath.Q{Raw: raw, Kind: kind}.AppendText(dst)
	}
	if neg {
		dst = append(dst, '-')
	}
	dst = decimal.AppendUint(dst, mag>>nf)
	dst = append(dst, '.')
	return decimal.AppendFrac(dst, mag&(1<<nf-1), nf)
}

// qMaxStrLen is Q_MAXSTRLEN(q, 10) with the reference's fix (defect 1d):
// sign, integer digits (a digit per 3 integer bits, rounded up, at least
// one), radix point, one digit per fractional bit, terminating NUL.
func qMaxStrLen(q qmath.Q) int {
	signed := 0
	if q.Kind.Signed() {
		signed = 1
	}
	nf := int(q.NFBits())
	nib := int(q.Kind.Bits()) - 3 - nf - signed
	return 2 + (nib+2)/3 + nf + signed + 1
}

package tostr

import (
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/decimal"
	"github.com/statsblob/statsblob/voi"
)

// appendHist appends the C's rendering of histogram data (data holds the
// stat's dsz bytes; hdt is the histogram dtype, voiDT the VOI's dtype) as
// stats_voistatdata_hist_tostr does:
//
//	FREEFORM  nbkts=N, oob=N
//	          then per bucket "\n\t\t\t\t" [bkt[I].]{lb=LB,ub=UB,cnt=N}
//	JSON      "nbkts":N,"oob":N,"bkts":[{["bkt":I,]"lb":LB,"ub":UB,"cnt":N},...]
//
// with the bracketed parts only for objdump, and bounds as hist.Bucket
// reports them (a CRHIST bucket ends where the next begins, the last one at
// the VOI type's maximum), rendered as values of the VOI's type. Data of a
// type that is not a histogram renders as nothing, as in the C.
func appendHist(dst, data []byte, voiDT, hdt voi.DType, f Format, objdump bool) []byte {
	return appendHistRec(dst, data, voiDT, hdt, f, objdump, nil)
}

// appendHistRec is appendHist, or with rec set, the text without the
// counts, whose places (the out-of-band count's, then each bucket's) it
// appends to *rec.
func appendHistRec(dst, data []byte, voiDT, hdt voi.DType, f Format, objdump bool, rec *[]int32) []byte {
	if !hdt.IsHist() {
		return dst
	}
	count := func(v uint64) {
		if rec != nil {
			*rec = append(*rec, int32(len(dst)))
		} else {
			dst = decimal.AppendUint(dst, v)
		}
	}
	n := hist.NumBuckets(hdt, len(data))
	if f == JSON {
		dst = append(dst, `"nbkts":`...)
	} else {
		dst = append(dst, "nbkts="...)
	}
	dst = decimal.AppendUint(dst, uint64(uint16(n)))
	if f == JSON {
		dst = append(dst, `,"oob":`...)
	} else {
		dst = append(dst, ", oob="...)
	}
	count(hist.OOB(data, hdt))
	if f == JSON {
		dst = append(dst, `,"bkts":[`...)
	}
	for i, b := range hist.Buckets(data, hdt, voiDT) {
		if f == JSON {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '{')
			if objdump {
				dst = append(dst, `"bkt":`...)
				dst = decimal.AppendUint(dst, uint64(uint16(i)))
				dst = append(dst, ',')
			}
			dst = append(dst, `"lb":`...)
			dst = voi.AppendNumeric(dst, voiDT, b.LB)
			dst = append(dst, `,"ub":`...)
			dst = voi.AppendNumeric(dst, voiDT, b.UB)
			dst = append(dst, `,"cnt":`...)
		} else {
			dst = append(dst, "\n\t\t\t\t"...)
			if objdump {
				dst = append(dst, "bkt["...)
				dst = decimal.AppendUint(dst, uint64(uint16(i)))
				dst = append(dst, "]."...)
			}
			dst = append(dst, "{lb="...)
			dst = voi.AppendNumeric(dst, voiDT, b.LB)
			dst = append(dst, ",ub="...)
			dst = voi.AppendNumeric(dst, voiDT, b.UB)
			dst = append(dst, ",cnt="...)
		}
		count(b.Cnt)
		dst = append(dst, '}')
	}
	if f == JSON {
		dst = append(dst, ']')
	}
	return dst
}

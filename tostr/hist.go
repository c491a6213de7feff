package tostr

import (
	"strconv"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/voi"
)

// appendHist appends the C's rendering of histogram data (data holds the
// stat's dsz bytes; hdt is the histogram dtype, voiDT the VOI's dtype) as
// stats_voistatdata_hist_tostr does: the bucket count and out-of-band
// count, then each bucket's bounds (rendered with the VOI's type) and
// count. A continuous-range bucket's upper bound is the next bucket's
// lower bound, or the type's maximum for the last.
func appendHist(dst, data []byte, voiDT, hdt voi.DType, f Format, objdump bool) []byte {
	n := hist.NumBuckets(hdt, len(data))
	if n < 0 || len(data) < 8 {
		return dst
	}
	json := f == JSON
	if json {
		dst = append(dst, `"nbkts":`...)
	} else {
		dst = append(dst, "nbkts="...)
	}
	dst = strconv.AppendUint(dst, uint64(uint16(n)), 10)
	if json {
		dst = append(dst, `,"oob":`...)
	} else {
		dst = append(dst, ", oob="...)
	}
	dst = strconv.AppendUint(dst, hist.OOB(data, hdt), 10)
	if json {
		dst = append(dst, `,"bkts":[`...)
	}
	for i := 0; i < n; i++ {
		lb, ub, cnt := hist.Bucket(data, hdt, voiDT, i)
		if json {
			dst = append(dst, '{')
			if objdump {
				dst = append(dst, `"bkt":`...)
				dst = strconv.AppendUint(dst, uint64(uint16(i)), 10)
				dst = append(dst, ',')
			}
			dst = append(dst, `"lb":`...)
		} else {
			dst = append(dst, "\n\t\t\t\t"...)
			if objdump {
				dst = append(dst, "bkt["...)
				dst = strconv.AppendUint(dst, uint64(uint16(i)), 10)
				dst = append(dst, "]."...)
			}
			dst = append(dst, "{lb="...)
		}
		dst = voi.AppendNumeric(dst, voiDT, lb)
		if json {
			dst = append(dst, `,"ub":`...)
		} else {
			dst = append(dst, ",ub="...)
		}
		dst = voi.AppendNumeric(dst, voiDT, ub)
		if json {
			dst = append(dst, `,"cnt":`...)
		} else {
			dst = append(dst, ",cnt="...)
		}
		dst = strconv.AppendUint(dst, cnt, 10)
		dst = append(dst, '}')
		if json && i < n-1 {
			dst = append(dst, ',')
		}
	}
	if json {
		dst = append(dst, ']')
	}
	return dst
}

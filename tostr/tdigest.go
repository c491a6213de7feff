package tostr

import (
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// appendTDigest appends the C's rendering of t-digest data (data holds the
// stat's dsz bytes; dt is the t-digest dtype) as
// stats_voistatdata_tdgst_tostr does. The rendering lives in package
// tdigest (tdigest.AppendText, where it is tested against the goldens);
// the VOI's dtype plays no part in it, as in the C.
func appendTDigest(dst, data []byte, voiDT, dt voi.DType, f Format, objdump bool) []byte {
	return tdigest.AppendText(dst, data, dt, f == JSON, objdump)
}

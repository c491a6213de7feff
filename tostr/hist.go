package tostr

import "github.com/statsblob/statsblob/voi"

func appendHist(dst, data []byte, voiDT, hdt voi.DType, f Format, objdump bool) []byte {
	return append(dst, "<hist not implemented>"...)
}

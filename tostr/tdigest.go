package tostr

import "github.com/statsblob/statsblob/voi"

func appendTDigest(dst, data []byte, voiDT, dt voi.DType, f Format, objdump bool) []byte {
	return append(dst, "<tdigest not implemented>"...)
}

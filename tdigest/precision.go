package tdigest

import "github.com/statsblob/statsblob/voi"

// MeanOffset returns the offset, in digest data of type dt, of the first
// centroid slot's mean, whose control bits (the low 3 bits of its first
// byte) are the digest's precision: every slot's mean carries them (Build
// writes them, updates, resets and merges keep them). ok is false for a
// type that is not a t-digest.
func MeanOffset(dt voi.DType) (off int, ok bool) {
	switch dt {
	case voi.TDgstClust32:
		return HeaderSize32 + linkLen, true
	case voi.TDgstClust64:
		return HeaderSize64 + linkLen, true
	}
	return 0, false
}

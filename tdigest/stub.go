package tdigest

// TEMPORARY STUB written by the lead so dependent packages compile before the
// real package lands. The tdigest owner: delete this file as soon as your own
// definitions exist (they replace everything below).

import (
	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/voi"
)

type Env struct {
	Rand  *bsdrand.Source
	Clock func() int64
}

func Build(dt voi.DType, nctds, prec uint32) ([]byte, error)            { return nil, voi.ErrNotSupported }
func Update(data []byte, dt, voiDT voi.DType, v uint64, env *Env) error { return voi.ErrNotSupported }
func Reset(data []byte, dt voi.DType)                                   {}

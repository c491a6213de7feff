package hist

// TEMPORARY STUB written by the lead so dependent packages compile before the
// real package lands. The hist owner: delete this file as soon as your own
// definitions exist (they replace everything below).

import "github.com/statsblob/statsblob/voi"

type Scheme uint8

const (
	Lin Scheme = iota
	Exp
	LinExp
	Usr
)

type Flags uint32

const (
	LBoundInf Flags = 0x01
	UBoundInf Flags = 0x02
)

type Bound struct{ LB, UB uint64 }

type Spec struct {
	DType      voi.DType
	Scheme     Scheme
	Flags      Flags
	LB, UB     uint64
	StepInc    uint64
	StepBase   uint64
	StepExp    uint64
	LinStepDiv uint64
	Buckets    []Bound
}

func (s Spec) Build(voiDT voi.DType) ([]byte, error)                       { return nil, voi.ErrNotSupported }
func Update(data []byte, hdt, voiDT voi.DType, v uint64) error             { return voi.ErrNotSupported }
func Reset(data []byte, hdt voi.DType)                                     {}
func NumBuckets(hdt voi.DType, dsz int) int                                { return 0 }
func OOB(data []byte, hdt voi.DType) uint64                                { return 0 }
func Bucket(data []byte, hdt, voiDT voi.DType, i int) (lb, ub, cnt uint64) { return }

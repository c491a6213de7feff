package remotewrite

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// The tests' decoder of the WriteRequests this package writes: a strict
// reading of the fields proto.go lists (packed deltas only, no unknown
// fields), so that a test sees exactly what was sent.

var errProto = errors.New("bad protobuf")

// fields calls f with every field of b.
func fields(b []byte, f func(num protowire.Number, typ protowire.Type, v uint64, p []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errProto
		}
		b = b[n:]
		var v uint64
		var p []byte
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			v, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			p, n = protowire.ConsumeBytes(b)
		default:
			return errProto
		}
		if n < 0 {
			return errProto
		}
		b = b[n:]
		if err := f(num, typ, v, p); err != nil {
			return err
		}
	}
	return nil
}

func decodeRequest(b []byte) ([]series, []metadata, error) {
	var out []series
	var md []metadata
	err := fields(b, func(num protowire.Number, typ protowire.Type, _ uint64, p []byte) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			s, err := decodeSeries(p)
			out = append(out, s)
			return err
		case num == 3 && typ == protowire.BytesType:
			var m metadata
			err := fields(p, func(num protowire.Number, typ protowire.Type, v uint64, p []byte) error {
				switch {
				case num == 1 && typ == protowire.VarintType:
					m.typ = metricType(v)
				case num == 2 && typ == protowire.BytesType:
					m.name = string(p)
				case num == 4 && typ == protowire.BytesType:
					m.help = string(p)
				case num == 5 && typ == protowire.BytesType:
					m.unit = string(p)
				default:
					return errProto
				}
				return nil
			})
			md = append(md, m)
			return err
		}
		return errProto
	})
	return out, md, err
}

func decodeSeries(b []byte) (series, error) {
	var s series
	err := fields(b, func(num protowire.Number, typ protowire.Type, _ uint64, p []byte) error {
		if typ != protowire.BytesType {
			return errProto
		}
		switch num {
		case 1:
			var l label
			err := fields(p, func(num protowire.Number, typ protowire.Type, _ uint64, p []byte) error {
				switch {
				case num == 1 && typ == protowire.BytesType:
					l.name = string(p)
				case num == 2 && typ == protowire.BytesType:
					l.value = string(p)
				default:
					return errProto
				}
				return nil
			})
			s.labels = append(s.labels, l)
			return err
		case 2:
			var sm sample
			err := fields(p, func(num protowire.Number, typ protowire.Type, v uint64, _ []byte) error {
				switch {
				case num == 1 && typ == protowire.Fixed64Type:
					sm.value = math.Float64frombits(v)
				case num == 2 && typ == protowire.VarintType:
					sm.ts = int64(v)
				default:
					return errProto
				}
				return nil
			})
			s.samples = append(s.samples, sm)
			return err
		case 4:
			h, err := decodeHist(p)
			s.histograms = append(s.histograms, h)
			return err
		}
		return errProto
	})
	return s, err
}

func decodeHist(b []byte) (nativeHist, error) {
	var h nativeHist
	var posSpans, negSpans [][2]int64
	var posDeltas, negDeltas []int64
	span := func(p []byte) ([2]int64, error) {
		var sp [2]int64
		err := fields(p, func(num protowire.Number, typ protowire.Type, v uint64, _ []byte) error {
			switch {
			case num == 1 && typ == protowire.VarintType:
				sp[0] = protowire.DecodeZigZag(v)
			case num == 2 && typ == protowire.VarintType:
				sp[1] = int64(v)
			default:
				return errProto
			}
			return nil
		})
		return sp, err
	}
	deltas := func(p []byte) ([]int64, error) {
		var out []int64
		for len(p) > 0 {
			v, n := protowire.ConsumeVarint(p)
			if n < 0 {
				return nil, errProto
			}
			out = append(out, protowire.DecodeZigZag(v))
			p = p[n:]
		}
		return out, nil
	}
	err := fields(b, func(num protowire.Number, typ protowire.Type, v uint64, p []byte) error {
		var err error
		var sp [2]int64
		switch {
		case num == 1 && typ == protowire.VarintType:
			h.count = v
		case num == 3 && typ == protowire.Fixed64Type:
			h.sum = math.Float64frombits(v)
		case num == 4 && typ == protowire.VarintType:
			h.schema = int32(protowire.DecodeZigZag(v))
		case num == 5 && typ == protowire.Fixed64Type:
			h.zeroThresh = math.Float64frombits(v)
		case num == 6 && typ == protowire.VarintType:
			h.zeroCount = v
		case num == 8 && typ == protowire.BytesType:
			sp, err = span(p)
			negSpans = append(negSpans, sp)
		case num == 9 && typ == protowire.BytesType:
			negDeltas, err = deltas(p)
		case num == 11 && typ == protowire.BytesType:
			sp, err = span(p)
			posSpans = append(posSpans, sp)
		case num == 12 && typ == protowire.BytesType:
			posDeltas, err = deltas(p)
		case num == 15 && typ == protowire.VarintType:
			h.ts = int64(v)
		default:
			return errProto
		}
		return err
	})
	undelta := func(spans [][2]int64, ds []int64) (int32, []uint64, error) {
		if len(spans) > 1 || len(spans) == 1 && spans[0][1] != int64(len(ds)) || len(spans) == 0 && len(ds) > 0 {
			return 0, nil, errProto
		}
		var out []uint64
		c := int64(0)
		for _, d := range ds {
			c += d
			if c < 0 {
				return 0, nil, errProto
			}
			out = append(out, uint64(c))
		}
		if len(spans) == 0 {
			return 0, nil, nil
		}
		return int32(spans[0][0]), out, nil
	}
	if err != nil {
		return h, err
	}
	if h.posOffset, h.pos, err = undelta(posSpans, posDeltas); err != nil {
		return h, err
	}
	h.negOffset, h.neg, err = undelta(negSpans, negDeltas)
	return h, err
}

// String renders a series as one line: name{labels} then each sample as
// value@ts, or each histogram's fields.
func (s series) String() string {
	var sb strings.Builder
	var ls []string
	for _, l := range s.labels {
		if l.name == "__name__" {
			sb.WriteString(l.value)
			continue
		}
		ls = append(ls, l.name+"="+l.value)
	}
	fmt.Fprintf(&sb, "{%s}", strings.Join(ls, ","))
	for _, x := range s.samples {
		fmt.Fprintf(&sb, " %v@%d", x.value, x.ts)
	}
	for _, h := range s.histograms {
		fmt.Fprintf(&sb, " hist(count=%d sum=%v schema=%d zero=%d pos=%d:%v neg=%d:%v)@%d",
			h.count, h.sum, h.schema, h.zeroCount, h.posOffset, h.pos, h.negOffset, h.neg, h.ts)
	}
	return sb.String()
}

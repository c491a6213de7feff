package remotewrite

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// The remote write 1.0 protocol buffers (prometheus/prometheus
// prompb/remote.proto and types.proto), the fields this package writes:
//
//	WriteRequest { repeated TimeSeries timeseries = 1; repeated MetricMetadata metadata = 3; }
//	MetricMetadata { MetricType type = 1; string metric_family_name = 2; string help = 4; string unit = 5; }
//	TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2;
//	               repeated Histogram histograms = 4; }
//	Label        { string name = 1; string value = 2; }
//	Sample       { double value = 1; int64 timestamp = 2; }  // ms since the epoch
//	Histogram    { uint64 count_int = 1; double sum = 3; sint32 schema = 4;
//	               double zero_threshold = 5; uint64 zero_count_int = 6;
//	               repeated BucketSpan negative_spans = 8; repeated sint64 negative_deltas = 9;
//	               repeated BucketSpan positive_spans = 11; repeated sint64 positive_deltas = 12;
//	               int64 timestamp = 15; }
//	BucketSpan   { sint32 offset = 1; uint32 length = 2; }
//
// A native histogram's buckets are delta-encoded: the first count, then
// each count minus the previous one, over the spans in order; the first
// span's offset is the index of its first bucket, a later span's the gap
// after the previous span. Prometheus's bucket i of schema s holds
// (2^((i-1)/2^s), 2^(i/2^s)]: OpenTelemetry's index plus one.
//
// Written by hand with protowire rather than by importing prompb: prompb
// pulls the gogo protobuf runtime and much of Prometheus into the module,
// for four small messages.

// series is one time series of a request: labels sorted by name, and
// either samples or native histograms.
type series struct {
	labels []label
	// one of:
	samples    []sample
	histograms []nativeHist
}

type label struct{ name, value string }

type sample struct {
	value float64
	ts    int64 // ms
}

// nativeHist is a native histogram with integer counts, each side one span.
type nativeHist struct {
	count, zeroCount uint64
	sum, zeroThresh  float64
	schema           int32
	posOffset        int32 // Prometheus index of the first positive bucket
	pos              []uint64
	negOffset        int32
	neg              []uint64
	ts               int64 // ms
}

// metadata is a family's type, help and unit (MetricMetadata).
type metadata struct {
	typ        metricType
	name, help string
	unit       string
}

// metricType is MetricMetadata.MetricType.
type metricType uint8

// The metric types this package sends.
const (
	typeCounter   metricType = 1
	typeGauge     metricType = 2
	typeHistogram metricType = 3
	typeSummary   metricType = 5
)

// appendRequest appends the WriteRequest of ss and md to b.
func appendRequest(b []byte, ss []series, md []metadata) []byte {
	for i := range ss {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = appendSized(b, func(b []byte) []byte { return appendSeries(b, &ss[i]) })
	}
	for _, m := range md {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = appendSized(b, func(b []byte) []byte {
			b = protowire.AppendTag(b, 1, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(m.typ))
			b = protowire.AppendTag(b, 2, protowire.BytesType)
			b = protowire.AppendString(b, m.name)
			b = protowire.AppendTag(b, 4, protowire.BytesType)
			b = protowire.AppendString(b, m.help)
			b = protowire.AppendTag(b, 5, protowire.BytesType)
			return protowire.AppendString(b, m.unit)
		})
	}
	return b
}

// appendSized appends the length-prefixed bytes f appends.
func appendSized(b []byte, f func([]byte) []byte) []byte {
	// Reserve one length byte; move the body when the length needs more.
	at := len(b)
	b = append(b, 0)
	b = f(b)
	n := len(b) - at - 1
	if n < 0x80 {
		b[at] = byte(n)
		return b
	}
	size := protowire.SizeVarint(uint64(n))
	b = append(b, make([]byte, size-1)...)
	copy(b[at+size:], b[at+1:at+1+n])
	protowire.AppendVarint(b[:at], uint64(n))
	return b
}

func appendSeries(b []byte, s *series) []byte {
	for _, l := range s.labels {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = appendSized(b, func(b []byte) []byte {
			b = protowire.AppendTag(b, 1, protowire.BytesType)
			b = protowire.AppendString(b, l.name)
			b = protowire.AppendTag(b, 2, protowire.BytesType)
			return protowire.AppendString(b, l.value)
		})
	}
	for _, sm := range s.samples {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = appendSized(b, func(b []byte) []byte {
			b = protowire.AppendTag(b, 1, protowire.Fixed64Type)
			b = protowire.AppendFixed64(b, math.Float64bits(sm.value))
			b = protowire.AppendTag(b, 2, protowire.VarintType)
			return protowire.AppendVarint(b, uint64(sm.ts))
		})
	}
	for i := range s.histograms {
		h := &s.histograms[i]
		b = protowire.AppendTag(b, 4, protowire.BytesType)
		b = appendSized(b, func(b []byte) []byte { return appendHist(b, h) })
	}
	return b
}

func appendHist(b []byte, h *nativeHist) []byte {
	b = protowire.AppendTag(b, 1, protowire.VarintType) // a oneof: written even when 0
	b = protowire.AppendVarint(b, h.count)
	b = protowire.AppendTag(b, 3, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(h.sum))
	b = protowire.AppendTag(b, 4, protowire.VarintType)
	b = protowire.AppendVarint(b, protowire.EncodeZigZag(int64(h.schema)))
	b = protowire.AppendTag(b, 5, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(h.zeroThresh))
	b = protowire.AppendTag(b, 6, protowire.VarintType) // a oneof: written even when 0
	b = protowire.AppendVarint(b, h.zeroCount)
	b = appendBuckets(b, 8, 9, h.negOffset, h.neg)
	b = appendBuckets(b, 11, 12, h.posOffset, h.pos)
	b = protowire.AppendTag(b, 15, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(h.ts))
}

// appendBuckets appends one span (field spanField) and the delta-encoded
// counts (field deltaField, packed).
func appendBuckets(b []byte, spanField, deltaField protowire.Number, offset int32, counts []uint64) []byte {
	if len(counts) == 0 {
		return b
	}
	b = protowire.AppendTag(b, spanField, protowire.BytesType)
	b = appendSized(b, func(b []byte) []byte {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, protowire.EncodeZigZag(int64(offset)))
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		return protowire.AppendVarint(b, uint64(len(counts)))
	})
	b = protowire.AppendTag(b, deltaField, protowire.BytesType)
	return appendSized(b, func(b []byte) []byte {
		prev := int64(0)
		for _, c := range counts {
			b = protowire.AppendVarint(b, protowire.EncodeZigZag(int64(c)-prev))
			prev = int64(c)
		}
		return b
	})
}

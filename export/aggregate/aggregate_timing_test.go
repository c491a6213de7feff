package aggregate_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/internal/stream"
	"github.com/statsblob/statsblob/internal/tcpsim"
	"github.com/statsblob/statsblob/internal/tcpstats"
	"github.com/statsblob/statsblob/tpl"
)

// tcpFleet returns n TCP_DEFAULT connection blobs, decoded as a collector
// receives them.
func tcpFleet(b testing.TB, n int) (*tpl.Template, []*blob.Blob) {
	tp, err := tcpstats.New(tpl.NewRegistry())
	require.NoError(b, err)
	s := stream.Stream(7)
	out := make([]*blob.Blob, n)
	for i := range out {
		c := blob.New(tp, blob.NewEnv(nil, uint32(i+1)))
		tcpsim.SimulateConn(c, &s, nil)
		out[i], err = blob.FromBytes(c.Bytes(), nil)
		require.NoError(b, err)
	}
	return tp, out
}

// BenchmarkAdd: the cost per TCP_DEFAULT blob of adding it to an
// aggregate (queue, fold, levels, and the final snapshot), beside
// BenchmarkMergeAll, one MergeAll of the same blobs per blob.
func BenchmarkAdd(b *testing.B) {
	tp, fleet := tcpFleet(b, 2000)
	b.ReportAllocs()
	b.ResetTimer()
	s, _ := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
	for i := 0; i < b.N; i++ {
		if err := s.Add("k", tp, nil, fleet[i%len(fleet)]); err != nil {
			b.Fatal(err)
		}
		if i%len(fleet) == len(fleet)-1 {
			s.Blobs()
		}
	}
	s.Blobs()
}

func BenchmarkMergeAll(b *testing.B) {
	_, fleet := tcpFleet(b, 2000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += len(fleet) {
		if _, err := blob.MergeAll(nil, fleet[:min(len(fleet), b.N-i)]...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScrapeSmallFolds: 1,000 aggregates each given 1, 3 or 15 blobs
// between snapshots (a scrape of many label sets that each posted a
// little): the time of a snapshot (ns/op), and the adds' time per blob
// (the folds of full batches are theirs).
func BenchmarkScrapeSmallFolds(b *testing.B) {
	tp, fleet := tcpFleet(b, 3000)
	for _, per := range []int{1, 3, 15} {
		b.Run(fmt.Sprint(per), func(b *testing.B) {
			s, _ := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
			keys := make([]string, 1000)
			for i := range keys {
				keys[i] = fmt.Sprint("k", i)
			}
			var adding time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				t0 := time.Now()
				for k, key := range keys {
					for j := range per {
						if err := s.Add(key, tp, nil, fleet[(per*(k+i)+j)%len(fleet)]); err != nil {
							b.Fatal(err)
						}
					}
				}
				adding += time.Since(t0)
				b.StartTimer()
				s.Blobs()
			}
			b.ReportMetric(float64(adding.Nanoseconds())/float64(b.N*len(keys)*per), "add-ns/blob")
		})
	}
}

// BenchmarkAddDecoded: a collector's path per blob, decode (FromBytes of
// the bytes a sender posted) and add, over 100 or 10,000 aggregates in
// turn, so that, as in a collector, a blob is folded long after it was
// decoded (with 100, a batch of every aggregate fills once in 100 x Batch
// blobs; with 10,000, the queues' memory budget makes each aggregate fold
// every few blobs).
func BenchmarkAddDecoded(b *testing.B) {
	tp, fleet := tcpFleet(b, 2000)
	raw := make([][]byte, len(fleet))
	for i, f := range fleet {
		raw[i] = f.Bytes()
	}
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			keys := make([]string, n)
			for i := range keys {
				keys[i] = fmt.Sprint("k", i)
			}
			s, _ := aggregate.New(aggregate.Config{MaxAggregates: n}, time.Unix(0, 0))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				bl, err := blob.FromBytes(raw[i%len(raw)], nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Add(keys[i%len(keys)], tp, nil, bl); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

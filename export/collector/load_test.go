package collector_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/stream"
	"github.com/statsblob/statsblob/internal/tcpsim"
	"github.com/statsblob/statsblob/internal/tcpstats"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// demoBlobs returns n TCP_DEFAULT connection blobs of the demo's workload.
func demoBlobs(t testing.TB, n int) (*tpl.Template, []*blob.Blob) {
	t.Helper()
	reg := tpl.NewRegistry()
	tp, err := tcpstats.New(reg)
	require.NoError(t, err)
	s := stream.Stream(7)
	out := make([]*blob.Blob, n)
	for i := range out {
		out[i] = blob.New(tp, blob.NewEnv(nil, uint32(i+1)))
		tcpsim.SimulateConn(out[i], &s, nil)
	}
	return tp, out
}

// totals are what an aggregate must hold: exact sums of the posted blobs'
// statistics.
type totals struct {
	txpb    uint64
	rtt     uint64   // t-digest samples
	acklen  []uint64 // histogram bucket counts
	csigOOB uint64
}

func totalsOf(t testing.TB, bs ...*blob.Blob) totals {
	var tt totals
	for _, b := range bs {
		v, err := b.FetchU64(tcpstats.TxPB, voi.Sum)
		require.NoError(t, err)
		tt.txpb += v
		st, err := b.Fetch(tcpstats.RTT, voi.TDgst)
		require.NoError(t, err)
		n, err := tdigest.Count(st.Data, st.DType)
		require.NoError(t, err)
		tt.rtt += n
		st, err = b.Fetch(tcpstats.AckLen, voi.Hist)
		require.NoError(t, err)
		i := 0
		for _, bk := range hist.Buckets(st.Data, st.DType, voi.IntU32) {
			if i == len(tt.acklen) {
				tt.acklen = append(tt.acklen, 0)
			}
			tt.acklen[i] += bk.Cnt
			i++
		}
		st, err = b.Fetch(tcpstats.CSig, voi.Hist)
		require.NoError(t, err)
		tt.csigOOB += hist.OOB(st.Data, st.DType)
	}
	return tt
}

// TestLoad: concurrent posters over loopback HTTP; every aggregate holds
// exactly what was posted to it, nothing lost or doubled.
func TestLoad(t *testing.T) {
	forEachServer(t, func(t *testing.T, _ string, on httpServer) { testLoad(t, on) })
}

func testLoad(t *testing.T, on httpServer) {
	const posters, perPoster, hosts = 8, 250, 4
	tp, bs := demoBlobs(t, 64)
	s, err := collector.New(collector.Config{Templates: tp.Registry()})
	require.NoError(t, err)
	base := "http://" + serveWith(t, s, on)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: posters}}
	defer client.CloseIdleConnections()

	sent := make([][]*blob.Blob, hosts)
	var mu sync.Mutex
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for p := range posters {
		wg.Go(func() {
			host := p % hosts
			url := fmt.Sprintf("%s/v1/blobs?host=h%d&poster=x", base, host)
			var mine []*blob.Blob
			for j := range perPoster {
				b := bs[(p*perPoster+j)%len(bs)]
				resp, err := client.Post(url, "application/octet-stream", bytes.NewReader(b.Bytes()))
				if err != nil {
					failed.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusNoContent {
					failed.Add(1)
					continue
				}
				mine = append(mine, b)
			}
			mu.Lock()
			sent[host] = append(sent[host], mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	require.Zero(t, failed.Load())
	t.Logf("%d posters x %d blobs over loopback: %.0f blobs/s", posters, perPoster, float64(posters*perPoster)/elapsed.Seconds())

	named := s.Blobs()
	require.Len(t, named, hosts)
	require.Equal(t, []uint64{500, 500, 500, 500}, s.Merged())
	for h, n := range named {
		require.Equal(t, fmt.Sprintf("h%d", h), n.Labels[0].Value)
		require.Equal(t, totalsOf(t, sent[h]...), totalsOf(t, n.Blob), "host h%d", h)
	}
	require.Equal(t, float64(posters*perPoster), (&rejectedCounter{s: s}).value())
}

// BenchmarkPostLoopback: blobs posted by parallel clients over loopback
// HTTP with keep-alive, merged into 4 aggregates, on each listener (the
// figure in bench/README.md).
func BenchmarkPostLoopback(b *testing.B) {
	for _, sv := range httpServers {
		b.Run(sv.name, func(b *testing.B) {
			tp, bs := demoBlobs(b, 64)
			s, err := collector.New(collector.Config{Templates: tp.Registry()})
			require.NoError(b, err)
			base := "http://" + serveWith(b, s, sv.on)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			defer client.CloseIdleConnections()
			var next atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := int(next.Add(1))
				url := fmt.Sprintf("%s/v1/blobs?host=h%d", base, i%4)
				for pb.Next() {
					resp, err := client.Post(url, "application/octet-stream", bytes.NewReader(bs[i%len(bs)].Bytes()))
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					i++
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "blobs/s")
		})
	}
}

// BenchmarkPostHandler: the handler alone (validate, look up, merge), no
// network.
func BenchmarkPostHandler(b *testing.B) {
	tp, bs := demoBlobs(b, 64)
	s, err := collector.New(collector.Config{Templates: tp.Registry()})
	require.NoError(b, err)
	var next atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(1))
		q := fmt.Sprintf("host=h%d", i%4)
		for pb.Next() {
			if code, body := post(b, s, http.MethodPost, q, bs[i%len(bs)].Bytes()); code != http.StatusNoContent {
				b.Fatal(code, body)
			}
			i++
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "blobs/s")
}

// TestLoadRotateScrape: posters, window rotations and scrapes at once;
// the closed windows and the current one together hold exactly what was
// posted (a post lands in exactly one window), and scrapes never fail.
func TestLoadRotateScrape(t *testing.T) {
	const posters, perPoster = 4, 150
	tp, bs := demoBlobs(t, 16)
	s, err := collector.New(collector.Config{Templates: tp.Registry(), Window: time.Hour})
	require.NoError(t, err)
	var closed []*blob.Blob
	var cmu sync.Mutex
	s.OnClose(func(c collector.Closed) {
		cmu.Lock()
		defer cmu.Unlock()
		for _, n := range c.Blobs {
			closed = append(closed, n.Blob)
		}
	})
	srv := httptest.NewServer(s)
	defer srv.Close()
	stop := make(chan struct{})
	var bg sync.WaitGroup
	var rotations, scrapes atomic.Int64
	bg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
				s.Rotate()
				rotations.Add(1)
			}
		}
	})
	bg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.Registry().Gather(); err != nil {
				t.Error(err)
				return
			}
			scrapes.Add(1)
		}
	})
	var wg sync.WaitGroup
	var sent []*blob.Blob
	var smu sync.Mutex
	for p := range posters {
		wg.Go(func() {
			for j := range perPoster {
				b := bs[(p+j)%len(bs)]
				resp, err := srv.Client().Post(srv.URL+"/v1/blobs?host=h", "application/octet-stream", bytes.NewReader(b.Bytes()))
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusNoContent {
					t.Errorf("status %d", resp.StatusCode)
					return
				}
				smu.Lock()
				sent = append(sent, b)
				smu.Unlock()
			}
		})
	}
	wg.Wait()
	close(stop)
	bg.Wait()
	require.Len(t, sent, posters*perPoster)
	var held []*blob.Blob
	held = append(held, closed...)
	for _, n := range s.Blobs() {
		held = append(held, n.Blob)
	}
	t.Logf("%d rotations, %d scrapes, %d windows with posts", rotations.Load(), scrapes.Load(), len(held))
	require.Greater(t, rotations.Load(), int64(1))
	require.Equal(t, totalsOf(t, sent...), totalsOf(t, held...))
}

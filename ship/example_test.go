package ship_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/family"
	"github.com/statsblob/statsblob/ship"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// request is one request the service served.
type request struct {
	method string
	status int
	micros uint32
}

// service records the latency of each request by method and status in a
// family of blobs, which a shipper sends to the collector every 10
// seconds and, when requests ends, once more before it returns.
func service(ctx context.Context, collector string, requests <-chan request) error {
	t, err := tpl.NewRegistry().New("HTTP")
	if err != nil {
		return err
	}
	err = t.AddVOI(tpl.VOIDef{ID: 0, Name: "latency_us", DType: voi.IntU32, Stats: []tpl.StatSpec{
		tpl.Sum(),
		tpl.HistExp[uint32](voi.CRHist32, 0, 1<<20, 2, 0, 0),
		tpl.TDigestOf(tpl.TDigestSpec{DType: voi.TDgstClust32, NCtds: 20, Prec: 4, Mode: tdigest.Accurate})}})
	if err != nil {
		return err
	}
	fam, err := family.New(t, []string{"method", "status"}, family.Options{MaxSets: 100})
	if err != nil {
		return err
	}
	sh, err := ship.New(&ship.HTTP{URL: collector}, ship.Options{
		Interval: 10 * time.Second, Labels: []ship.Label{{Name: "host", Value: "web1"}}})
	if err != nil {
		return err
	}
	if err := sh.AddFamily(fam); err != nil {
		return err
	}
	go sh.Run(ctx) // every 10 s: snapshot, POST, retry, merge what is unsent

	for r := range requests {
		b, err := fam.With(r.method, strconv.Itoa(r.status)) // no allocation once the set exists
		if err == nil {
			err = b.UpdateU32(0, r.micros) // a *blob.Sharded: safe from any goroutine
		}
		if err != nil {
			return err // (a real service would count it and go on)
		}
	}

	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := sh.Close(cctx); err != nil { // ships the last snapshot
		return err
	}
	st := sh.Stats()
	fmt.Printf("sent %d messages, %d retried, %d dropped\n", st.Sent, st.Retried, st.Dropped)
	return nil
}

// Example_shipper runs the service against a stand-in collector that
// prints what it received.
func Example_shipper() {
	var mu sync.Mutex
	got := map[string][2]uint64{} // labels: samples, latency sum
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b, err := blob.FromBytes(body, nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		sum, _ := b.FetchU32(0, voi.Sum)
		td, _ := b.Fetch(0, voi.TDgst)
		n, _ := td.Count()
		mu.Lock()
		g := got[r.URL.RawQuery]
		got[r.URL.RawQuery] = [2]uint64{g[0] + n, g[1] + uint64(sum)}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer collector.Close()

	requests := make(chan request, 1000)
	for i := range 1000 {
		r := request{method: "GET", status: 200, micros: uint32(100 + i%50)}
		if i%10 == 0 {
			r = request{method: "POST", status: 500, micros: 2000}
		}
		requests <- r
	}
	close(requests)
	if err := service(context.Background(), collector.URL+"/v1/blobs", requests); err != nil {
		fmt.Println(err)
	}
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Printf("%s: %d requests, %d µs\n", k, got[k][0], got[k][1])
	}
	// Output:
	// sent 2 messages, 0 retried, 0 dropped
	// host=web1&method=GET&status=200: 900 requests, 112500 µs
	// host=web1&method=POST&status=500: 100 requests, 200000 µs
}

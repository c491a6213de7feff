package promexport_test

import (
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/promexport"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// A service exports its blob's snapshots: the collector maps whatever the
// source returns at each scrape.
func ExampleNew() {
	reg := tpl.NewRegistry()
	t, _ := reg.New("CONN")
	_ = t.AddVOI(tpl.VOIDef{ID: 0, Name: "txbytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}})
	_ = t.AddVOI(tpl.VOIDef{ID: 1, Name: "rtt", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Max()}})
	live := blob.New(t, nil)
	_ = live.UpdateU64(0, 1448)
	_ = live.UpdateU32(1, 180)

	src := export.SourceFunc(func() []export.Named {
		return []export.Named{{Blob: live.Snapshot(false), Template: t, Labels: []export.Label{{Name: "host", Value: "web1"}}}}
	})
	c, _ := promexport.New(src, export.Options{})
	pr := prometheus.NewRegistry()
	pr.MustRegister(c)

	w := httptest.NewRecorder()
	promhttp.HandlerFor(pr, promhttp.HandlerOpts{}).ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range strings.Split(w.Body.String(), "\n") {
		if strings.HasPrefix(line, "conn_") {
			fmt.Println(line)
		}
	}
	// Output:
	// conn_rtt_max{host="web1"} 180
	// conn_txbytes_total{host="web1"} 1448
}

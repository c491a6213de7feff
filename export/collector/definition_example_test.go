package collector_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// An operator stops exporting one VOI while the collector keeps adding it
// up, as `echo "name=rtt on=0" > definition` does on Linux, then resets
// another (what `statsblob def URL 'name=rtt on=0'` sends).
func ExampleServer_definition() {
	reg := tpl.NewRegistry()
	t, _ := reg.New("CONN")
	_ = t.AddVOI(tpl.VOIDef{ID: 0, Name: "txbytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}})
	_ = t.AddVOI(tpl.VOIDef{ID: 1, Name: "rtt", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Max()}})
	now := func() time.Time { return time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC) }
	s, _ := collector.New(collector.Config{Templates: reg, Now: now})
	srv := httptest.NewServer(s)
	defer srv.Close()
	b := blob.New(t, nil)
	_ = b.UpdateU64(0, 1448)
	_ = b.UpdateU32(1, 250)
	resp, _ := http.Post(srv.URL+"/v1/blobs?svc=api", "application/octet-stream", bytes.NewReader(b.Bytes()))
	resp.Body.Close()

	define := func(lines string) {
		resp, _ := http.Post(srv.URL+"/v1/definition?tpl=CONN", "text/plain", strings.NewReader(lines))
		text, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Print(resp.Status, "\n", string(text))
	}
	define("name=rtt on=0\nname=txbytes data=reset")
	define("name=nope on=0")

	resp, _ = http.Get(srv.URL + "/metrics")
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "conn_") {
			fmt.Println(line)
		}
	}
	// Output:
	// 200 OK
	// on=1
	// name=txbytes on=1
	// name=rtt on=0 stopped=2026-11-27T12:00:00Z
	// 400 Bad Request
	// definition: statdef: line 1: no VOI named "nope" in "CONN":3759840309: invalid argument
	// conn_txbytes_total{svc="api"} 0
}

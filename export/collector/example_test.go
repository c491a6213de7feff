package collector_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/export/internal/fixture"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Two services post their blobs; Prometheus scrapes the sum.
func ExampleServer() {
	reg := tpl.NewRegistry()
	t, _ := reg.New("CONN")
	_ = t.AddVOI(tpl.VOIDef{ID: 0, Name: "txbytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}})
	s, _ := collector.New(collector.Config{Templates: reg})
	srv := httptest.NewServer(s)
	defer srv.Close()

	for _, n := range []uint64{1000, 448} {
		b := blob.New(t, nil)
		_ = b.UpdateU64(0, n)
		resp, _ := http.Post(srv.URL+"/v1/blobs?svc=api", "application/octet-stream", bytes.NewReader(b.Bytes()))
		resp.Body.Close()
		fmt.Println(resp.Status)
	}
	resp, _ := http.Post(srv.URL+"/v1/blobs?svc=api", "application/octet-stream", strings.NewReader("junk"))
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(resp.Status, ": ", string(msg))

	resp, _ = http.Get(srv.URL + "/metrics")
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "conn_") || strings.HasPrefix(line, "statsblob_collector_blobs_") && !strings.Contains(line, " 0") {
			fmt.Println(line)
		}
	}
	// Output:
	// 204 No Content
	// 204 No Content
	// 400 Bad Request: blob: need at least 32 bytes of header, have 4: invalid argument
	// conn_txbytes_total{svc="api"} 1448
	// statsblob_collector_blobs_accepted_total 2
	// statsblob_collector_blobs_rejected_total{reason="blob"} 1
}

// A batch of blobs in one POST /v1/batch: the magic, then one frame per
// blob with its labels.
func ExampleAppendBatchFrame() {
	t := fixture.Kitchen()
	s, _ := collector.New(collector.Config{Templates: t.Registry()})
	kb := fixture.KitchenBlob(t).Bytes()
	body := []byte(collector.BatchMagic)
	for _, host := range []string{"a", "b", "a"} {
		body, _ = collector.AppendBatchFrame(body, "host="+host, kb)
	}
	r := httptest.NewRequest(http.MethodPost, "/v1/batch?svc=api", bytes.NewReader(body))
	r.Header.Set(aggregate.HeaderSender, "web1")
	r.Header.Set(aggregate.HeaderSeq, "1")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	fmt.Println(w.Code, s.Merged())
	// Output: 204 [2 1]
}

package remotewrite_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/remotewrite"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// A Writer sends snapshots of blobs to a remote write endpoint (here a test
// server standing in for Prometheus), with a label of its own on every
// series, and Close ships what is queued.
func ExampleWriter() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println(r.Method, r.URL.Path, r.Header.Get("Content-Encoding"), r.Header.Get("Content-Type"))
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	reg := tpl.NewRegistry()
	t, _ := reg.New("CONN")
	_ = t.AddVOI(tpl.VOIDef{ID: 0, Name: "txbytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}})
	b := blob.New(t, nil)
	_ = b.UpdateU64(0, 1448)

	w, err := remotewrite.New(remotewrite.Config{URL: srv.URL + "/api/v1/write",
		Labels: []export.Label{{Name: "collector", Value: "c1"}}})
	if err != nil {
		panic(err)
	}
	_ = w.Enqueue([]export.Named{{Blob: b, Template: t}}, time.Now(), time.Time{})
	fmt.Println(w.Close(context.Background()))
	// Output:
	// POST /api/v1/write snappy application/x-protobuf
	// <nil>
}

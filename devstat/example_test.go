package devstat_test

import (
	"fmt"

	"github.com/statsblob/statsblob/devstat"
	"github.com/statsblob/statsblob/tpl"
)

// A device's transactions, read back as iostat shows them. The clock is
// simulated here so that the output is fixed: each write takes 2 ms and
// the device idles 2 ms after it.
func Example() {
	tp, err := devstat.Template(tpl.NewRegistry())
	if err != nil {
		panic(err)
	}
	var now int64 // ns
	d, err := devstat.New(tp, devstat.Options{Clock: func() int64 { return now }})
	if err != nil {
		panic(err)
	}
	for range 250 {
		tx := d.Start()
		now += 2e6
		if err := d.End(tx, 128<<10, devstat.Write, devstat.TagSimple); err != nil {
			panic(err)
		}
		now += 2e6
	}
	st, err := devstat.Compute(nil, d.Snapshot(true)) // one window: the last second
	if err != nil {
		panic(err)
	}
	fmt.Printf("%.0f tps, %.0f KB/t, %.2f MB/s, %.0f%% busy, %.1f ms/w, p50 %v\n",
		st.TPS, st.KBPerTransfer, st.MBPerSec, st.BusyPercent, st.MsPerOp(devstat.Write), st.LatencyP50)
	// Output: 250 tps, 128 KB/t, 31.25 MB/s, 50% busy, 2.0 ms/w, p50 2ms
}

package statdef_test

import (
	"fmt"
	"os"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/statdef"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// A service turns the statistics of one VOI off and resets another, as
// Linux's `echo "name=rtt on=0" > definition` does, then reads the
// definition back.
func Example() {
	t, _ := tpl.NewRegistry().New("CONN")
	_ = t.AddVOI(tpl.VOIDef{ID: 0, Name: "bytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}})
	_ = t.AddVOI(tpl.VOIDef{ID: 1, Name: "rtt", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Max()}})
	s := blob.NewSharded(t, 2, nil)
	ctl := &blob.Control{Clock: func() time.Time { return time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC) }}
	s.SetControl(ctl)
	def := statdef.Def{Template: t, Control: ctl, Reset: s}

	_ = s.UpdateU64(0, 1500)
	if err := def.Apply("name=rtt on=0\nname=bytes data=reset"); err != nil {
		fmt.Println(err)
	}
	_ = s.UpdateU32(1, 250) // rtt is off: not counted
	_ = s.UpdateU64(0, 40)
	_ = def.Write(os.Stdout)

	snap, _ := s.Snapshot(false)
	bytes, _ := snap.Fetch(0, voi.Sum)
	n, _ := bytes.Value()
	rtt, _ := snap.Fetch(1, voi.Max)
	fmt.Println("bytes:", n, "rtt updated:", rtt.Valid)
	// Output:
	// on=1
	// name=bytes on=1
	// name=rtt on=0 stopped=2026-11-27T12:00:00Z
	// bytes: 40 rtt updated: false
}

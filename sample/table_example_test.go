package sample_test

import (
	"errors"
	"fmt"

	"github.com/statsblob/statsblob/sample"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

func ExampleTable() {
	reg := tpl.NewRegistry()
	for _, name := range []string{"tcp_basic", "tcp_full"} {
		if _, err := reg.New(name); err != nil {
			panic(err)
		}
	}
	rates := sample.NewTable(reg)

	// What an administrator writes to the sysctl: sample 10% of flows
	// with tcp_basic and 5% with tcp_full.
	if err := rates.Set(`tcp_basic=10, "tcp_full"=5`); err != nil {
		panic(err)
	}
	fmt.Println(rates) // what reading the sysctl prints

	// On the hot path, a flow's 4-tuple decides, the same way every time.
	for _, flow := range []string{
		"10.0.0.11:443 10.0.0.2:50000",
		"10.0.0.1:443 10.0.0.2:50000",
		"10.0.0.0:443 10.0.0.2:50000",
	} {
		switch id := rates.Roll([]byte(flow)); id {
		case -1:
			fmt.Println(flow, "not sampled")
		default:
			t, _ := reg.ByID(int(id))
			fmt.Println(flow, "sampled with", t.Name())
		}
	}

	// A rejected list changes nothing.
	err := rates.Set("tcp_basic=60,tcp_full=50")
	fmt.Println(errors.Is(err, voi.ErrInvalid), err)
	fmt.Println(rates)
	// Output:
	// "tcp_basic":488591626=10,"tcp_full":361291195=5
	// 10.0.0.11:443 10.0.0.2:50000 sampled with tcp_basic
	// 10.0.0.1:443 10.0.0.2:50000 sampled with tcp_full
	// 10.0.0.0:443 10.0.0.2:50000 not sampled
	// true sample: rates, byte 13: cumulative percentage 110 exceeds 100: invalid argument
	// "tcp_basic":488591626=10,"tcp_full":361291195=5
}

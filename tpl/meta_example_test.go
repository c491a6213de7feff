package tpl_test

import (
	"encoding/json"
	"fmt"

	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Metadata says what a template's numbers mean without changing its bytes
// or hash; the JSON form carries it (version 2).
func ExampleTemplate_SetVOIMeta() {
	t, _ := tpl.NewRegistry().New("HTTP")
	_ = t.AddVOI(tpl.VOIDef{ID: 0, Name: "latency_us", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Max()}})
	hash := t.Hash()
	t.SetDescription("HTTP server")
	if err := t.SetVOIMeta(0, tpl.VOIMeta{Unit: "us", Help: "Request latency."}); err != nil {
		fmt.Println(err)
	}
	m, _ := t.VOIMeta(0)
	fmt.Println(m.Unit, m.Scale, t.Hash() == hash)
	j, _ := json.Marshal(t)
	fmt.Println(string(j))
	// Output:
	// seconds 1e-06 true
	// {"format":"statsblob-template","version":2,"name":"HTTP","hash":1138419835,"vois":[{"id":0,"name":"latency_us","dtype":"INT_U32","stats":[{"type":"MAX"}],"unit":"seconds","scale":0.000001,"help":"Request latency."}],"description":"HTTP server"}
}

package tdigest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/statsblob/statsblob/voi"
)

// put takes a free node, gives it mean v (integer, 4 fractional bits) and
// count 1, and inserts it.
func put(d *digest[node64], v int64) int {
	e := d.getFree()
	le.PutUint64(d.nodes[d.off(e)+8:], setS64(1, v<<4))
	d.setCnt(e, 1)
	d.insert(e)
	d.setSmplcnt(d.smplcnt() + 1)
	return e
}

func order(t *testing.T, data []byte, o Order) []string {
	t.Helper()
	it, err := Iter(data, voi.TDgstClust64, o)
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for it.Next() {
		c := it.Centroid()
		s = append(s, fmt.Sprintf("%d:%v", c.Index, c.Mean()))
	}
	return s
}

// TestStaleCachedMin builds the state in which the C's cached minimum is
// stale: the minimum X has a red right child R, X's mean grows past R's,
// and ARB_REINSERT removes X (the cache moves to X's parent) and inserts it
// after R (the cache stays). The C then starts every search and rendering
// from the stale cache, skipping R and X.
func TestStaleCachedMin(t *testing.T) {
	data, _ := Build(voi.TDgstClust64, 8, 4)
	var d digest[node64]
	if err := d.init(data, nil); err != nil {
		t.Fatal(err)
	}
	p := put(&d, 20)
	put(&d, 30)
	x := put(&d, 10)
	r := put(&d, 15)
	if d.hget(hMin) != x || d.right(x) != r || d.color(r) != red || d.parent(x) != p {
		t.Fatalf("unexpected shape: min %d, right(x) %d", d.hget(hMin), d.right(x))
	}
	le.PutUint64(d.nodes[d.off(x)+8:], setS64(1, 17<<4))
	d.reinsert(x)
	if err := Validate(data, voi.TDgstClust64); err != nil {
		t.Fatal(err)
	}
	if got := d.hget(hMin); got != p {
		t.Fatalf("cached min %d, want the stale %d", got, p)
	}
	mean, cached := order(t, data, MeanOrder), order(t, data, CachedOrder)
	if want := []string{"3:15", "2:17", "0:20", "1:30"}; !slices.Equal(mean, want) {
		t.Fatalf("mean order %v, want %v", mean, want)
	}
	if want := []string{"0:20", "1:30"}; !slices.Equal(cached, want) {
		t.Fatalf("cached order %v, want %v", cached, want)
	}
	if got, want := string(AppendText(nil, data, voi.TDgstClust64, false, false)),
		"smplcnt=4, compcnt=0, maxctds=8, nctds=4\n\t\t\t\t{mu=20.0000,cnt=1}\n\t\t\t\t{mu=30.0000,cnt=1}"; got != want {
		t.Fatalf("rendering %q, want %q", got, want)
	}
	if n := len(order(t, data, SlotOrder)); n != 8 {
		t.Fatalf("slot order visits %d slots", n)
	}
	// Queries use the true order.
	if m, _ := Quantile(data, voi.TDgstClust64, 0); m != 15 {
		t.Fatalf("Quantile(0) = %v", m)
	}
}

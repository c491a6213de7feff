// Package par runs the independent steps of one job on the cores there
// are: the folds of a snapshot of many aggregates, the rendering of the
// aggregates a scrape has not seen.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Do calls f(w, i) for i from 0 to n-1 on up to GOMAXPROCS goroutines,
// each given at least minPer of the steps, and returns when all are done;
// w (0 to Workers(n, minPer)-1) names the goroutine, for scratch of its
// own. With fewer than two goroutines' worth of steps it calls them in
// order on the caller's.
func Do(n, minPer int, f func(w, i int)) {
	workers := Workers(n, minPer)
	if workers < 2 {
		for i := range n {
			f(0, i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(w, i)
			}
		})
	}
	wg.Wait()
}

// Workers is the number of goroutines Do uses for n steps of at least
// minPer each (1 when it runs them on the caller's).
func Workers(n, minPer int) int {
	return max(1, min(runtime.GOMAXPROCS(0), n/max(minPer, 1)))
}

// Package alloctest measures the heap bytes a function allocates, for
// tests that bound allocations in bytes (testing.AllocsPerRun counts
// allocations, not their size). It imports nothing of the module.
package alloctest

import "runtime"

// Bytes returns the heap bytes one call of f allocates: the average over
// runs calls (at least one), the least of five tries (a try can count
// what other goroutines allocate meanwhile). It collects garbage before
// each try, so it suits tests, not benchmarks.
func Bytes(runs int, f func()) uint64 {
	runs = max(runs, 1)
	best := uint64(1<<64 - 1)
	for range 5 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range runs {
			f()
		}
		runtime.ReadMemStats(&after)
		best = min(best, (after.TotalAlloc-before.TotalAlloc)/uint64(runs))
	}
	return best
}

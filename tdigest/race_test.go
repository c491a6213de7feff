//go:build race

package tdigest_test

// raceEnabled: the race detector slows updates about tenfold, and the
// accuracy sweeps share no memory between goroutines worth checking.
const raceEnabled = true

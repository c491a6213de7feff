//go:build race

package gen_test

// raceEnabled: the race detector slows the runner about tenfold and these
// tests share no memory between goroutines worth checking at full size.
const raceEnabled = true

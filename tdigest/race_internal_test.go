//go:build race

package tdigest

// raceOn: the race detector slows updates about tenfold (see raceEnabled).
const raceOn = true

//go:build !race

package tdigest_test

const raceEnabled = false

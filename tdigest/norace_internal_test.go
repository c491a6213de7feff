//go:build !race

package tdigest

const raceOn = false

//go:build !race

package aggregate_test

const raceEnabled = false

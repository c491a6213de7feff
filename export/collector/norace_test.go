//go:build !race

package collector_test

const raceEnabled = false

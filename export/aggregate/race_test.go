//go:build race

package aggregate_test

// raceEnabled shrinks the accuracy test's fleets under the race detector,
// which makes its updates and merges about 20 times slower.
const raceEnabled = true

//go:build race

package tpl

// raceEnabled reports a -race build, whose instrumented loops make the
// largest templates slow to build.
const raceEnabled = true

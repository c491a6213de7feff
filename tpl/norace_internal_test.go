//go:build !race

package tpl

const raceEnabled = false

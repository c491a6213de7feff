package main

import (
	"io"
)

func runDemo(args []string, stdout, stderr io.Writer) int {
	return 0
}

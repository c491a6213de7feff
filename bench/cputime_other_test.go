//go:build !unix

package bench_test

// processCPU is not measured here.
func processCPU() int64 { return 0 }

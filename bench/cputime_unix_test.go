//go:build unix

package bench_test

import "syscall"

// processCPU returns the process's user and system CPU time in ns (every
// thread: the collector's work included).
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

package tdigest

// SetReseedOnCompress switches the srandom hypothesis for a test (see
// reseedOnCompress) and returns a function restoring the default.
func SetReseedOnCompress(mode int) (restore func()) {
	old := reseedOnCompress
	reseedOnCompress = mode
	return func() { reseedOnCompress = old }
}

// AppendMean exposes appendMean to the tests.
var AppendMean = appendMean

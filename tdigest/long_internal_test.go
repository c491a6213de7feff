package tdigest

import "os"

// longTests reports whether the long sweeps run (STATSBLOB_LONG=1, which
// `make accuracy` sets): by default the package's tests run fixed, smaller
// seed sets and sizes that assert the same bounds, so that `make test`
// (-race) stays fast; the long runs repeat them at full size.
func longTests() bool { return os.Getenv("STATSBLOB_LONG") != "" }

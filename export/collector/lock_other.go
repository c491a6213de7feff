//go:build !unix

package collector

import "os"

// lockDir does nothing where flock is not available.
func lockDir(string) (*os.File, error) { return nil, nil }

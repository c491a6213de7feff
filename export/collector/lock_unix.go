//go:build unix

package collector

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/statsblob/statsblob/voi"
)

// lockDir takes DataDir's lock (flock of DIR/lock), so that two collectors
// never write one log; the lock goes with the process (kill -9 included).
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("collector: -data-dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("collector: -data-dir %s is in use by another collector (%v): %w", dir, err, voi.ErrInvalid)
	}
	return f, nil
}

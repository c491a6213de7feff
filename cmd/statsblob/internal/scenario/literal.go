package scenario

import (
	"fmt"

	"github.com/statsblob/statsblob/internal/literal"
	"github.com/statsblob/statsblob/voi"
)

// errSyntax marks a malformed scenario line.
var errSyntax = literal.ErrSyntax

// parseInt reads an INT literal (FORMAT.md 3.1).
func parseInt(tok string) (uint64, error) { return literal.Int(tok) }

// rc formats an engine result (FORMAT.md 4).
func rc(errno int) string {
	switch {
	case errno == 0:
		return "OK"
	case errno > 0:
		return fmt.Sprintf("%s(fbsd=%d)", voi.ErrnoName(errno), errno)
	}
	return fmt.Sprintf("-%s(fbsd=%d)", voi.ErrnoName(-errno), errno)
}

func rcErr(err error) string {
	if n := voi.Errno(err); n >= 0 {
		return rc(n)
	}
	return "E?(fbsd=-1)"
}

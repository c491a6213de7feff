// Package lut holds the counter table of a histogram layout: the offset of
// the counter of every value in a window of keys, so that an update finds
// its counter with one load. Package hist builds tables when it analyses a
// histogram's bounds (hist.Layout); package blob's update path reads them
// (through internal/trusted.HistLayout), inlined. Neither is part of a
// public API.
package lut

// Counters is a counter table. Keys are key(v) = v&Mask ^ Flip (the order
// of the VOI's integer type). T holds the counter offset of every key in
// [Lo, Lo+len(T)-2), then one for every key above that window, then one
// for every key below it (outside the window no bound lies between two
// keys, so one answer serves each side). The zero Counters has no table.
// Tables are shared by copies and never written once built.
type Counters struct {
	T          []uint16
	Mask, Flip uint64
	Lo         uint64
}

// Counter returns the offset, in the histogram data, of the counter an
// update with value v increments (0, the out-of-band counter, when no
// bucket takes it), and whether there is a table at all.
func (c *Counters) Counter(v uint64) (off int, ok bool) {
	t := c.T
	if len(t) < 2 {
		return 0, false
	}
	x := v&c.Mask ^ c.Flip
	i := x - c.Lo // wraps below the window
	above := uint64(len(t) - 2)
	if i > above {
		i = above
	}
	if x < c.Lo {
		i = above + 1
	}
	return int(t[i]), true
}

// Bytes is the size of the table in bytes (0 without one).
func (c *Counters) Bytes() int { return 2 * len(c.T) }

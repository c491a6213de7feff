package collector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/internal/hashfmt"
	"github.com/statsblob/statsblob/export/internal/wal"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Closed windows a delta OTLP push has yet to ship (with DataDir). The
// rotation writes the closed window to DIR/closed-START.win (START the
// window's start, Unix nanoseconds in hexadecimal) in the same step as
// the rotation's record, which keeps its posts out of the window under
// way at a restart (and the checkpoint after it, out of the log), and
// the pusher removes the file once it has pushed the window (or dropped
// it, counted, past MaxPending). On start, New reads the files back and the delta
// Pusher made from the Server pushes them first, oldest first; a file of
// a window the log's replay did not close (the process died after the
// file was written, before the rotation's record was on disk) is dropped,
// its posts being in the window under way. A file is written through a
// temporary name, synced and renamed: whole or absent.
//
//	"SBWIN2\n"  magic
//	start, end  int64, Unix nanoseconds
//	n           uint32 aggregates, then each:
//	  hash        uint32 the aggregate's (wide) template hash
//	  posted      uint32 the hash of the template its blobs were posted as
//	                     (export.Named.Posted; 0 if unknown)
//	  labels      uint32 count, then name and value strings
//	  blobs       uint64 posted blobs it holds
//	  blob        string the aggregate's bytes
//	crc         uint32 CRC-32C of everything before it
//
// (a string is its length as a uint32 and its bytes, little-endian).
// Version 1 ("SBWIN1\n") files, without posted, still read: their
// aggregates do not say which version of a template they were posted as.

const (
	closedMagic   = "SBWIN2\n"
	closedMagicV1 = "SBWIN1\n"
)

// errClosedFile is wrapped by decodeClosed's errors of layout.
var errClosedFile = fmt.Errorf("collector: bad closed-window file: %w", voi.ErrInvalid)

func closedName(start time.Time) string {
	return fmt.Sprintf("closed-%016x.win", uint64(start.UnixNano()))
}

// saveClosed writes c for the delta pusher, if there is one and DataDir.
func (s *Server) saveClosed(c Closed) error {
	if s.log == nil || !s.closedFiles.Load() || len(c.Blobs) == 0 {
		return nil
	}
	p := []byte(closedMagic)
	p = binary.LittleEndian.AppendUint64(p, uint64(c.Start.UnixNano()))
	p = binary.LittleEndian.AppendUint64(p, uint64(c.End.UnixNano()))
	p = binary.LittleEndian.AppendUint32(p, uint32(len(c.Blobs)))
	for i, n := range c.Blobs {
		p = binary.LittleEndian.AppendUint32(p, n.Template.Hash())
		var posted uint32
		if n.Posted != nil {
			posted = n.Posted.Hash()
		}
		p = binary.LittleEndian.AppendUint32(p, posted)
		p = binary.LittleEndian.AppendUint32(p, uint32(len(n.Labels)))
		for _, l := range n.Labels {
			p = appendStr(p, l.Name)
			p = appendStr(p, l.Value)
		}
		var cnt uint64
		if i < len(c.Counts) {
			cnt = c.Counts[i]
		}
		p = binary.LittleEndian.AppendUint64(p, cnt)
		p = appendStr(p, string(n.Blob.Bytes()))
	}
	p = binary.LittleEndian.AppendUint32(p, crc32.Checksum(p, castagnoli))
	if err := wal.WriteFile(filepath.Join(s.cfg.DataDir, closedName(c.Start)), p, !s.cfg.NoSync); err != nil {
		return fmt.Errorf("collector: closed window: %w", err)
	}
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func appendStr(dst []byte, s string) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

// closedShipped removes the file of a closed window the pusher is done
// with.
func (s *Server) closedShipped(c Closed) {
	if s.cfg.DataDir == "" {
		return
	}
	err := os.Remove(filepath.Join(s.cfg.DataDir, closedName(c.Start)))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		s.warn("a shipped window's file could not be removed", "err", err)
	}
}

// loadClosed reads the closed windows DataDir holds, oldest first.
func (s *Server) loadClosed() error {
	ents, err := os.ReadDir(s.cfg.DataDir)
	if err != nil {
		return fmt.Errorf("collector: -data-dir: %w", err)
	}
	var wide map[uint32]*tpl.Template
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, "closed-") || !strings.HasSuffix(name, ".win") {
			continue
		}
		if wide == nil {
			wide = map[uint32]*tpl.Template{}
			for _, t := range s.tpls.idx.Load().order {
				if w, err := tpl.Widen(t); err == nil {
					wide[w.Hash()] = w
				}
			}
		}
		p, err := os.ReadFile(filepath.Join(s.cfg.DataDir, name))
		if err != nil {
			return fmt.Errorf("collector: -data-dir: %w", err)
		}
		c, err := decodeClosed(p, wide, s.tpls.idx.Load().byHash)
		if err != nil {
			return fmt.Errorf("collector: -data-dir %s: %s: %w", s.cfg.DataDir, name, err)
		}
		if !c.Start.Before(s.set.Start()) {
			// The rotation wrote the file, then died before its record
			// was on disk: the log's replay kept the window's posts in
			// the window under way, which ships them when it closes.
			s.warn("a closed window whose rotation the log does not hold: its posts are in the window under way, the file is dropped",
				"file", name, "window_start", c.Start)
			if err := os.Remove(filepath.Join(s.cfg.DataDir, name)); err != nil {
				return fmt.Errorf("collector: -data-dir: %w", err)
			}
			continue
		}
		s.recovered = append(s.recovered, c)
	}
	slices.SortFunc(s.recovered, func(a, b Closed) int { return a.Start.Compare(b.Start) })
	return nil
}

// decodeClosed reads a closed window saveClosed wrote; wide finds the
// aggregates' templates by hash, known the templates they were posted as
// (an unknown one is left nil). Errors wrap voi.ErrInvalid.
func decodeClosed(p []byte, wide, known map[uint32]*tpl.Template) (Closed, error) {
	var c Closed
	if len(p) < len(closedMagic)+4 {
		return c, fmt.Errorf("not a closed window: %w", voi.ErrInvalid)
	}
	v2 := string(p[:len(closedMagic)]) == closedMagic
	if !v2 && string(p[:len(closedMagicV1)]) != closedMagicV1 {
		return c, fmt.Errorf("not a closed window: %w", voi.ErrInvalid)
	}
	body := p[:len(p)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(p[len(p)-4:]) {
		return c, fmt.Errorf("a closed window failing its checksum: %w", voi.ErrInvalid)
	}
	d := newDecoder(body[len(closedMagic):], errClosedFile)
	c.Start = time.Unix(0, int64(d.U64()))
	c.End = time.Unix(0, int64(d.U64()))
	n := d.U32()
	if !d.Fits(uint64(n), 20) {
		d.fail("aggregate count beyond the bytes")
	}
	str := func() string { return string(d.Bytes(int(d.U32()))) }
	versionOf := map[*tpl.Template]uint32{} // a posted template's wide hash, once each
	for i := uint32(0); i < n && d.Err() == nil; i++ {
		hash := d.U32()
		var posted *tpl.Template
		if v2 {
			posted = known[d.U32()]
		}
		k := d.U32()
		if !d.Fits(uint64(k), 8) {
			d.fail("label count beyond the bytes")
			break
		}
		labels := make([]export.Label, 0, k)
		for range k {
			labels = append(labels, export.Label{Name: str(), Value: str()})
		}
		cnt := d.U64()
		raw := str()
		if d.Err() != nil {
			break
		}
		w := wide[hash]
		if w == nil {
			return c, fmt.Errorf("aggregate %d: template hash %s is not the wide form of a known template: %w", i, hashfmt.String(hash), voi.ErrInvalid)
		}
		b, err := blob.FromBytes([]byte(raw), nil)
		if err == nil {
			err = b.CheckTemplate(w)
		}
		if err != nil {
			return c, fmt.Errorf("aggregate %d: %w: %w", i, voi.ErrInvalid, err)
		}
		if posted != nil {
			wh, ok := versionOf[posted]
			if !ok {
				if pw, err := tpl.Widen(posted); err == nil {
					wh = pw.Hash()
				}
				versionOf[posted] = wh
			}
			if wh != w.Hash() {
				posted = nil // (not a version of the wide form: unknown)
			}
		}
		c.Blobs = append(c.Blobs, export.Named{Blob: b, Template: w, Posted: posted, Labels: labels, Start: c.Start})
		c.Counts = append(c.Counts, cnt)
		c.Posts += cnt
	}
	if d.Err() == nil && d.Len() != 0 {
		d.fail(strconv.Itoa(d.Len()) + " bytes after the window")
	}
	return c, d.Err()
}

// takeRecovered returns the closed windows read from DataDir, once.
func (s *Server) takeRecovered() []Closed {
	s.recoveredMu.Lock()
	defer s.recoveredMu.Unlock()
	r := s.recovered
	s.recovered = nil
	for i := range r {
		r[i].Blobs = s.withVersions(s.withDefs(r[i].Blobs))
	}
	return r
}

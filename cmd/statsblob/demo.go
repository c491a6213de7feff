package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/internal/accuracy"
	"github.com/statsblob/statsblob/internal/stream"
	"github.com/statsblob/statsblob/internal/tcpsim"
	"github.com/statsblob/statsblob/internal/tcpstats"
	"github.com/statsblob/statsblob/sample"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tostr"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

func runDemo(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("demo", "demo [-conns N] [-seed S] [-rate PCT] [-out DIR] [-merged FILE]",
		"Demo builds FreeBSD's TCP_DEFAULT template, simulates connections from a\n"+
			"seeded stream, samples them with the seeded dice roll, and writes one blob\n"+
			"file per sampled connection (DIR/conn-NNNNN.blob) and DIR/templates.json.\n"+
			"It first removes the conn-NNNNN.blob files (and the merged.blob of older\n"+
			"versions) an earlier run left in DIR, so DIR/*.blob holds this run's\n"+
			"connections only. It then renders one blob, merges all snapshots into the\n"+
			"merged blob file, beside DIR rather than inside it (DIR.merged.blob unless\n"+
			"-merged says otherwise), and prints RTT quantiles.\n",
		stdout, stderr)
	conns := fs.Int("conns", 5000, "simulated connections, `N` >= 1")
	seed := fs.Uint64("seed", 1, "seed `S` of the simulation's value stream, not 0")
	rate := fs.Uint("rate", 40, "percentage `PCT` of connections sampled with TCP_DEFAULT, <= 100")
	out := fs.String("out", "demo-out", "`DIR` for the blob files and templates.json")
	merged := fs.String("merged", "", "merged blob `FILE` (default DIR.merged.blob)")
	pos, code, ok := fs.parse(args, 0)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return fs.usageError("unexpected argument %q", pos[0])
	}
	switch {
	case *conns < 1:
		return fs.usageError("-conns %d: need at least 1", *conns)
	case *seed == 0:
		return fs.usageError("-seed 0: need a nonzero seed")
	case *rate > 100:
		return fs.usageError("-rate %d: need at most 100", *rate)
	}
	if *merged == "" {
		dir := filepath.Clean(*out)
		if b := filepath.Base(dir); b == "." || b == ".." {
			if abs, err := filepath.Abs(dir); err == nil {
				dir = abs // "." gives ../NAME.merged.blob, not ..merged.blob
			}
		}
		*merged = dir + ".merged.blob"
	}
	if inside(*merged, *out) {
		return fs.usageError("-merged %s is inside %s: merging %s/*.blob would count it twice", *merged, *out, filepath.Clean(*out))
	}
	if err := demo(stdout, stderr, *conns, *seed, uint32(*rate), *out, *merged); err != nil {
		fs.fail(err)
		return 1
	}
	return 0
}

// inside reports whether file would be created in directory dir.
func inside(file, dir string) bool {
	f, err1 := filepath.Abs(filepath.Dir(file))
	d, err2 := filepath.Abs(dir)
	return err1 == nil && err2 == nil && f == d
}

// staleBlob matches the names of the blob files earlier demo runs wrote
// into their output directory: the connections' and, before the merged blob
// moved beside the directory, merged.blob.
var staleBlob = regexp.MustCompile(`^(conn-[0-9]+|merged)\.blob$`)

// clearStale removes the blob files an earlier demo run left in dir, so
// that dir/*.blob names this run's connections only.
func clearStale(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Type().IsRegular() && staleBlob.MatchString(e.Name()) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func demo(stdout, stderr io.Writer, conns int, seed uint64, rate uint32, out, mergedFile string) error {
	reg := tpl.NewRegistry()
	t, err := tcpstats.New(reg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := clearStale(out); err != nil {
		return err
	}
	if err := writeTemplates(filepath.Join(out, "templates.json"), t); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "template %s: %d VOIs, %d-byte blobs\n", t.Spec(), len(t.VOIs()), t.Size())

	// Sampling: each connection's 4-tuple seeds the dice roll, so a flow
	// always gets the same decision.
	rates := []sample.Rate{{TplID: int32(t.ID()), Pct: rate}}
	s := stream.Stream(seed)
	clock := blob.SBinTime(1000, 0)
	env := &blob.Env{Rand: bsdrand.New(uint32(seed)), Clock: func() int64 { return clock }}
	tty := isTerminal(stderr)
	// One long-lived blob of all the RTTs per clustering mode, beside the
	// per-connection blobs: the accurate mode is what a service that keeps
	// one digest for hours wants (the C's clustering lets a few heavy
	// centroids absorb most samples past about 10^4).
	longC, longAcc, err := longLived(t, env)
	if err != nil {
		return err
	}
	var snaps []*blob.Blob
	var rtts []float64 // every RTT sample, for exact quantiles
	var tuple [12]byte
	for c := 0; c < conns; c++ {
		binary.BigEndian.PutUint32(tuple[0:], 0x0a000000|uint32(s.Next()&0xffffff)) // 10.x.y.z
		binary.BigEndian.PutUint32(tuple[4:], 0xc0a80001)                           // 192.168.0.1
		binary.BigEndian.PutUint16(tuple[8:], uint16(1024+s.Next()%60000))
		binary.BigEndian.PutUint16(tuple[10:], 443)
		if sample.Roll(rates, tuple[:], nil) < 0 {
			continue
		}
		b := blob.New(t, env)
		before := len(rtts)
		rtts = tcpsim.SimulateConn(b, &s, rtts)
		for _, v := range rtts[before:] {
			_ = longC.UpdateU32(tcpstats.RTT, uint32(v))
			_ = longAcc.UpdateU32(tcpstats.RTT, uint32(v))
		}
		clock += 1 << 28 // connections end 1/16 s apart
		snaps = append(snaps, b.Snapshot(false))
		if err := os.WriteFile(filepath.Join(out, fmt.Sprintf("conn-%05d.blob", c)), b.Bytes(), 0o644); err != nil {
			return err
		}
		if tty && len(snaps)%100 == 0 {
			fmt.Fprintf(stderr, "\r%d/%d connections, %d sampled", c+1, conns, len(snaps))
		}
	}
	if tty {
		fmt.Fprintf(stderr, "\r%d/%d connections, %d sampled\n", conns, conns, len(snaps))
	}
	fmt.Fprintf(stdout, "%d of %d connections sampled at %d%%, blob files in %s/\n\n", len(snaps), conns, rate, filepath.Clean(out))
	if len(snaps) == 0 {
		// No merged blob: none from an earlier run may pass for this one's.
		if err := os.Remove(mergedFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}

	fmt.Fprintln(stdout, "first sampled connection:")
	if err := tostr.Write(stdout, snaps[0], tostr.Options{Format: tostr.FreeForm, Flags: tostr.Meta | tostr.NoAddr, Registry: reg}); err != nil {
		return err
	}
	fmt.Fprint(stdout, "\n\n")

	merged, err := blob.MergeAll(blob.NewEnv(nil, 1), snaps...)
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	if err := writeFileAtomic(mergedFile, merged.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "merged blob of the %d sampled connections in %s\n\n", len(snaps), mergedFile)
	return printRTT(stdout, merged, snaps, rtts, longAcc, longC)
}

// longLived returns two blobs of TCP_DEFAULT's layout whose TCP_RTT
// t-digest clusters as the C does and in the accurate mode (a template of
// the same bytes and hash, its RTT digest declared tdigest.Accurate).
func longLived(t *tpl.Template, env *blob.Env) (c, acc *blob.Blob, err error) {
	ta, err := tpl.NewRegistry().New(t.Name())
	if err != nil {
		return nil, nil, err
	}
	for _, d := range t.VOIs() {
		d.Stats = slices.Clone(d.Stats)
		for i := range d.Stats {
			if d.ID == tcpstats.RTT && d.Stats[i].Type == voi.TDgst {
				d.Stats[i].TDigest.Mode = tdigest.Accurate
			}
		}
		if err := ta.AddVOI(d); err != nil {
			return nil, nil, err
		}
	}
	return blob.New(t, blob.NewEnv(env.Clock, 1)), blob.New(ta, blob.NewEnv(env.Clock, 1)), nil
}

// printRTT prints RTT quantiles three ways, each with its rank error
// against the samples: exact (from every sample), from the merged blob's
// t-digest (tdigest.MergeAll of the per-connection digests), and from
// merging the per-connection digests in caio/go-tdigest instead (package
// caiotd), at the largest compression that keeps as many centroids as the
// blob's digest has slots.
func printRTT(w io.Writer, merged *blob.Blob, snaps []*blob.Blob, rtts []float64, longAcc, longC *blob.Blob) error {
	st, err := merged.Fetch(tcpstats.RTT, voi.TDgst)
	if err != nil {
		return err
	}
	min, _ := merged.FetchU32(tcpstats.RTT, voi.Min)
	max, _ := merged.FetchU32(tcpstats.RTT, voi.Max)
	info, err := tdigest.ReadInfo(st.Data, st.DType)
	if err != nil {
		return err
	}
	digests := make([][]byte, 0, len(snaps))
	for _, b := range snaps {
		s, err := b.Fetch(tcpstats.RTT, voi.TDgst)
		if err != nil {
			return err
		}
		digests = append(digests, s.Data)
	}
	cd, comp := accuracy.CaioMerged(digests, st.DType, int(info.MaxNodes))
	slices.Sort(rtts)
	fmt.Fprintf(w, "TCP_RTT over %d sampled connections, %d samples: min %d µs, max %d µs\n", len(snaps), len(rtts), min, max)
	fmt.Fprintf(w, "  merged blob: the %d per-connection TDGSTCLUST32(%d,4) digests merged into one (%d centroids)\n", len(snaps), info.MaxNodes, info.CurNodes)
	fmt.Fprintf(w, "  caio: the same digests merged in caio/go-tdigest at compression %.1f (at most %d centroids)\n", comp, info.MaxNodes)
	fmt.Fprintf(w, "  one blob: every sample in one long-lived blob's TDGSTCLUST32(%d,4), accurate mode and the C's clustering\n", info.MaxNodes)
	fmt.Fprintf(w, "  in parentheses the rank error: how far the estimate's rank among the samples is from q\n")
	fmt.Fprintf(w, "  %-6s %10s   %-20s %-20s %-20s %s\n", "q", "exact", "merged blob", "caio", "one blob, accurate", "one blob, C")
	cell := func(v, q float64) string {
		return fmt.Sprintf("%.0fµs (%.2f%%)", v, 100*accuracy.RankError(rtts, q, v))
	}
	sa, err := longAcc.Fetch(tcpstats.RTT, voi.TDgst)
	if err != nil {
		return err
	}
	sc, err := longC.Fetch(tcpstats.RTT, voi.TDgst)
	if err != nil {
		return err
	}
	for _, q := range accuracy.Quantiles {
		// The library's answers: bounded by MIN and MAX, integers for
		// the integer VOI.
		est, err := st.Quantile(q)
		if err != nil {
			return err
		}
		ea, err := sa.Quantile(q)
		if err != nil {
			return err
		}
		ec, err := sc.Quantile(q)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  p%-5g %8.0fµs   %-20s %-20s %-20s %s\n", q*100, accuracy.Exact(rtts, q), cell(est, q), cell(cd.Quantile(q), q), cell(ea, q), cell(ec, q))
	}
	return nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

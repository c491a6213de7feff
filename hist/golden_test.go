//go:build go1.24

package hist

// Conformance against the C reference's golden outputs: every histogram
// spec of the scenarios that use histograms is built with Build and compared
// with the bytes the C left in the template and blobs (dump tplhex, dump
// hex), and the scenario's updates, snapshots and clones are replayed with
// Update and Reset and compared at every hex dump.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/statsblob/statsblob/internal/golden"
	"github.com/statsblob/statsblob/internal/literal"
	"github.com/statsblob/statsblob/internal/stream"
	"github.com/statsblob/statsblob/voi"
)

const conformanceDir = "../testdata/conformance"

// goldenScenarios are the scenarios whose templates hold histograms.
var goldenScenarios = []string{
	"06_crhist32_lin", "07_crhist64_lin", "08_crhist32_exp", "09_crhist64_exp",
	"10_crhist32_linexp", "11_crhist64_linexp", "12_crhist_usr", "13_drhist_usr",
	"14_dvhist_usr", "20_signed_negative", "22_relupdate", "23_snapshot_reset",
	"24_clone", "25_boundaries", "26_invalid", "28_tcp_default", "29_visit",
	"32_hist_edge", "35_fixed_defects",
}

// statSpec is one stat spec of a voi line.
type statSpec struct {
	name string
	hist *Spec
	n    uint64 // t-digest centroids
}

// size is the data size of the stat on a VOI of type dt (hist: its built
// size, computed by the caller).
func (s statSpec) size(dt voi.DType, histLen int) int {
	switch s.name {
	case "TDGSTCLUST32":
		return 20 + int(s.n)*16
	case "TDGSTCLUST64":
		return 32 + int(s.n)*24
	}
	if s.hist != nil {
		return histLen
	}
	return dt.Size()
}

// parseStat reads a stat spec token (FORMAT.md 3.5).
func parseStat(tok string) (statSpec, error) {
	g, err := golden.ParseStat(tok)
	if err != nil {
		return statSpec{}, err
	}
	name, _, _ := strings.Cut(tok, "(")
	st := statSpec{name: strings.ToUpper(name), n: uint64(uint32(g.NCtds))}
	if g.Type == voi.Hist {
		st.hist = &Spec{DType: g.DType, Flags: Flags(g.Flags), LB: g.LB, UB: g.UB,
			StepInc: g.StepInc, StepBase: g.StepBase, StepExp: g.StepExp, LinStepDiv: g.LinStep}
		st.hist.Scheme = map[string]Scheme{"LIN": Lin, "EXP": Exp, "LINEXP": LinExp, "USR": Usr}[g.Scheme]
		for _, b := range g.Buckets {
			st.hist.Buckets = append(st.hist.Buckets, Bound{b[0], b[1]})
		}
	}
	return st, nil
}

func readGolden(t *testing.T, name string) []golden.Block {
	t.Helper()
	bs, err := golden.ReadFile(filepath.Join(conformanceDir, "golden", name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// hexBytes decodes the hex lines of a dump (FORMAT.md 7.1).
func hexBytes(t *testing.T, lines []string) []byte {
	t.Helper()
	b, err := golden.Hex(lines)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// statData locates the data of stat slot st of VOI id in blob bytes b.
func statData(b []byte, id, st int) (hdt voi.DType, off, dsz int, ok bool) {
	if len(b) < 32 {
		return
	}
	statsOff := int(binary.LittleEndian.Uint16(b[12:]))
	nvois := (statsOff - 32) / 8
	if id >= nvois {
		return
	}
	vo := 32 + 8*id
	if int16(binary.LittleEndian.Uint16(b[vo:])) < 0 || int(int8(b[vo+3])) < st {
		return
	}
	so := int(binary.LittleEndian.Uint16(b[vo+4:])) + 8*st
	if int8(b[so]) != int8(st) {
		return
	}
	off = int(binary.LittleEndian.Uint16(b[so+2:]))
	dsz = int(binary.LittleEndian.Uint16(b[so+4:]))
	return voi.DType(b[so+1]), off, dsz, off+dsz <= len(b)
}

// simVOI is a VOI as the replay knows it.
type simVOI struct {
	dt      voi.DType
	rel     bool
	specs   []statSpec
	built   [][]byte // per spec: the built histogram data (nil for other stats)
	lastH   int      // index of the spec holding the HIST slot, or -1
	unknown bool     // a Q VOI: values are not replayed
}

// simBlob is a blob's histogram data as the replay computes it.
type simBlob struct {
	vois    map[int]*simVOI  // the VOIs of the blob's template
	hists   map[int][][]byte // VOI id -> per spec histogram data (nil for others)
	prev    map[int]uint64
	unknown bool
}

func (b *simBlob) clone() *simBlob {
	c := &simBlob{vois: b.vois, hists: map[int][][]byte{}, prev: map[int]uint64{}, unknown: b.unknown}
	for id, hs := range b.hists {
		for _, h := range hs {
			c.hists[id] = append(c.hists[id], bytes.Clone(h))
		}
	}
	for id, p := range b.prev {
		c.prev[id] = p
	}
	return c
}

// replay runs one scenario's golden against Build/Update/Reset. It returns
// the number of histogram comparisons made.
func replay(t *testing.T, name string) int {
	type tpl struct {
		name string
		vois map[int]*simVOI
	}
	var (
		tpls    []*tpl
		curTpl  *tpl
		blobs   = map[string]*simBlob{}
		curBlob string
		str     = stream.Stream(stream.Seed)
		checks  int
	)
	findTpl := func(n string) *tpl {
		for _, p := range tpls {
			if p.name == n {
				return p
			}
		}
		return nil
	}
	newBlob := func(p *tpl) *simBlob {
		b := &simBlob{vois: p.vois, hists: map[int][][]byte{}, prev: map[int]uint64{}}
		for id, v := range p.vois {
			if v.lastH < 0 {
				continue
			}
			for _, h := range v.built {
				b.hists[id] = append(b.hists[id], bytes.Clone(h))
			}
			b.prev[id] = 0
		}
		return b
	}
	rcOK := func(bl golden.Block) bool {
		return len(bl.Out) > 0 && (strings.Contains(bl.Out[0], "= OK") || strings.HasPrefix(bl.Out[0], "tpl_alloc") && !strings.Contains(bl.Out[0], "-E"))
	}
	// compare checks the histogram data of the VOIs of p (blob b) against
	// the bytes raw of a template or blob dump.
	compare := func(where string, raw []byte, vois map[int]*simVOI, hists map[int][][]byte) {
		for id, v := range vois {
			if v.lastH < 0 || v.unknown {
				continue
			}
			hs := hists[id]
			if hs == nil {
				continue // VOI added after the blob was made
			}
			hdt, off, dsz, ok := statData(raw, id, int(voi.Hist))
			if !ok {
				continue
			}
			if hdt != v.specs[v.lastH].hist.DType || dsz != len(hs[v.lastH]) {
				t.Errorf("%s %s voi %d: golden %v dsz %d, built %v dsz %d", name, where, id, hdt, dsz, v.specs[v.lastH].hist.DType, len(hs[v.lastH]))
				continue
			}
			// Earlier histograms of the same voi line lie before the one in
			// the slot, each spec's data after the previous one's.
			pos := off
			for j := v.lastH; j >= 0; j-- {
				if j < v.lastH {
					pos -= v.specs[j].size(v.dt, len(v.built[j]))
				}
				if hs[j] == nil {
					continue
				}
				got := raw[pos : pos+len(hs[j])]
				checks++
				if !bytes.Equal(got, hs[j]) {
					t.Errorf("%s %s voi %d spec %d (%s) at %d:\n golden %x\n ours   %x", name, where, id, j, v.specs[j].name, pos, got, hs[j])
				}
			}
		}
	}
	update := func(b *simBlob, vois map[int]*simVOI, id int, dt voi.DType, rel bool, x uint64) {
		v := vois[id]
		hs := b.hists[id]
		if v == nil || dt != v.dt || rel && !v.rel {
			return
		}
		if v.unknown {
			return
		}
		if dt.Is32() {
			x = uint64(uint32(x))
		}
		if rel {
			x += b.prev[id]
			if dt.Is32() {
				x = uint64(uint32(x))
			}
		}
		if hs != nil {
			h := hs[v.lastH]
			if err := Update(h, v.specs[v.lastH].hist.DType, dt, x); err != nil {
				t.Fatalf("%s: Update: %v", name, err)
			}
		}
		b.prev[id] = x
	}

	scn, err := os.ReadFile(filepath.Join(conformanceDir, "scenarios", name+".scn"))
	if err != nil {
		t.Fatal(err)
	}
	var cmds [][]string
	for line := range strings.SplitSeq(string(scn), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if f := strings.Fields(line); len(f) > 0 {
			cmds = append(cmds, f)
		}
	}
	gold := readGolden(t, name)
	if len(gold) != len(cmds) {
		t.Fatalf("%s: %d commands, %d golden blocks", name, len(cmds), len(gold))
	}
	for ci, c := range cmds {
		bl := gold[ci]
		if strings.Join(bl.Tok, " ") != strings.Join(c, " ") {
			t.Fatalf("%s: command %q vs golden %q", name, c, bl.Tok)
		}
		arg := func(i int, def string) string {
			if i < len(c) {
				return c[i]
			}
			return def
		}
		switch c[0] {
		case "tpl":
			if rcOK(bl) {
				curTpl = &tpl{name: c[1], vois: map[int]*simVOI{}}
				tpls = append(tpls, curTpl)
			}
		case "usetpl":
			curTpl = findTpl(c[1])
		case "voi":
			idv, _ := literal.Int(c[1])
			id := int(int32(idv))
			dtTok, _, _ := strings.Cut(c[3], "/")
			dt, ok := voi.ParseDType(dtTok)
			if !ok {
				x, _ := literal.Int(dtTok)
				dt = voi.DType(x)
			}
			v := &simVOI{dt: dt, lastH: -1, unknown: dt.IsQ()}
			i := 4
			override := false
			for ; i < len(c) && c[i] != ":"; i++ {
				switch {
				case strings.EqualFold(c[i], "relupdate"):
					v.rel = true
				case strings.HasPrefix(c[i], "tpl="):
					override = true
				}
			}
			var buildErr error
			for _, tok := range c[i+1:] {
				st, err := parseStat(tok)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				var h []byte
				if st.hist != nil {
					h, err = st.hist.Build(dt)
					if err != nil {
						buildErr = err
					}
					v.lastH = len(v.specs)
				}
				v.specs = append(v.specs, st)
				v.built = append(v.built, h)
			}
			ok = rcOK(bl)
			if buildErr != nil && ok {
				t.Errorf("%s: %v: Build failed (%v), the C succeeded", name, c, buildErr)
			}
			if buildErr != nil && !strings.Contains(bl.Out[0], "EINVAL") && dt.IsNumeric() {
				t.Errorf("%s: %v: Build failed (%v), the C said %s", name, c, buildErr, bl.Out[0])
			}
			if ok && !override && curTpl != nil {
				curTpl.vois[id] = v
			}
		case "blob":
			p := curTpl
			if tn := arg(2, ""); tn != "" {
				p = findTpl(tn)
			}
			n := arg(1, "b")
			if p == nil {
				blobs[n] = &simBlob{unknown: true}
			} else {
				blobs[n] = newBlob(p)
			}
			curBlob = n
		case "init":
			if rcOK(bl) {
				blobs[c[1]] = newBlob(findTpl(c[2]))
				curBlob = c[1]
			} else {
				blobs[c[1]] = &simBlob{unknown: true}
			}
		case "use":
			curBlob = c[1]
		case "destroy":
			delete(blobs, c[1])
			if curBlob == c[1] {
				curBlob = ""
			}
		case "stream":
			x, _ := literal.Int(c[1])
			str = stream.Stream(x)
		case "update", "updates":
			b := blobs[curBlob]
			if b == nil || b.unknown {
				continue
			}
			p := b.vois
			idv, _ := literal.Int(c[2])
			id := int(int32(idv))
			v := p[id]
			if v == nil {
				continue
			}
			dt := v.dt
			rel := c[1] == "rel"
			if c[0] == "update" {
				if len(c) > 5 && c[4] == "as" {
					dtTok, _, _ := strings.Cut(c[5], "/")
					var ok bool
					if dt, ok = voi.ParseDType(dtTok); !ok {
						x, _ := literal.Int(dtTok)
						dt = voi.DType(x)
					}
				}
				if dt.IsQ() {
					continue
				}
				x, err := literal.Int(c[3])
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				update(b, p, id, dt, rel, x)
				continue
			}
			n, _ := literal.Int(c[3])
			for range n {
				dist, err := stream.ParseDist(c[4])
				x := dist(str.Next())
				if err != nil {
					t.Fatal(err)
				}
				update(b, p, id, dt, rel, x)
			}
		case "snapshot", "clone", "clone_into":
			if !rcOK(bl) {
				if c[0] == "clone_into" {
					blobs[c[1]] = &simBlob{unknown: true}
				}
				continue
			}
			src := blobs[curBlob]
			blobs[c[1]] = src.clone()
			reset := c[len(c)-1] == "reset"
			if reset && c[0] != "clone" {
				p := src.vois
				for id, hs := range src.hists {
					for j, h := range hs {
						if h != nil && j == p[id].lastH {
							Reset(h, p[id].specs[j].hist.DType)
						}
					}
				}
			}
		case "dump":
			switch c[1] {
			case "tplhex":
				p := curTpl
				if tn := arg(2, ""); tn != "" {
					p = findTpl(tn)
				}
				raw := hexBytes(t, bl.Out[1:])
				built := map[int][][]byte{}
				for id, v := range p.vois {
					built[id] = v.built
				}
				compare("tplhex", raw, p.vois, built)
			case "layout":
				n := arg(2, curBlob)
				b := blobs[n]
				if b == nil || b.unknown {
					continue
				}
				checks += compareLayout(t, name+" layout "+n, bl.Out, b)
			case "hex":
				n := arg(2, curBlob)
				b := blobs[n]
				if b == nil || b.unknown || strings.Contains(bl.Out[0], "cursz") && !dumpComplete(bl.Out[0]) {
					continue
				}
				compare("hex "+n, hexBytes(t, bl.Out[1:]), b.vois, b.hists)
			}
		}
	}
	return checks
}

// dumpComplete reports whether a "blob NAME: cursz=... (dumping N)" line
// dumps all cursz bytes.
func dumpComplete(line string) bool {
	var name string
	var cursz, maxsz, bufsz, n int
	_, err := fmt.Sscanf(line, "blob %s cursz=%d maxsz=%d bufsz=%d (dumping %d)", &name, &cursz, &maxsz, &bufsz, &n)
	return err == nil && n == cursz
}

// compareLayout checks the histogram lines of a dump layout (FORMAT.md 7.4)
// against the replayed blob b.
func compareLayout(t *testing.T, where string, out []string, b *simBlob) int {
	checks := 0
	var id int
	var h []byte
	var v *simVOI
	var hdt voi.DType
	var nb int
	for _, l := range out {
		l = strings.TrimSpace(l)
		var i, at int
		switch {
		case strings.HasPrefix(l, "voi["):
			h = nil
			fmt.Sscanf(l, "voi[%d]@%d: id=%d", &i, &at, &id)
		case strings.HasPrefix(l, "voistat[4]@") && strings.Contains(l, "stype=HIST"):
			h, v = nil, b.vois[id]
			if v == nil || v.unknown || b.hists[id] == nil {
				continue
			}
			h = b.hists[id][v.lastH]
			hdt = v.specs[v.lastH].hist.DType
			var dts string
			var off, dsz int
			fmt.Sscanf(l[strings.Index(l, "dtype="):], "dtype=%s data_off=%d dsz=%d", &dts, &off, &dsz)
			if dts != hdt.String() || dsz != len(h) {
				t.Errorf("%s voi %d: golden %s dsz %d, ours %v dsz %d", where, id, dts, dsz, hdt, len(h))
				h = nil
			}
		case h != nil && strings.HasPrefix(l, "oob="):
			var oob uint64
			fmt.Sscanf(l, "oob=%d nbkts=%d", &oob, &nb)
			if oob != OOB(h, hdt) || nb != NumBuckets(hdt, len(h)) {
				t.Errorf("%s voi %d: golden %q, ours oob=%d nbkts=%d", where, id, l, OOB(h, hdt), NumBuckets(hdt, len(h)))
			}
			checks++
		case h != nil && strings.HasPrefix(l, "bkt["):
			var raw, cnt uint64
			fmt.Sscanf(l, "bkt[%d]: lbraw=0x%x", &i, &raw)
			fmt.Sscanf(l[strings.LastIndex(l, "cnt="):], "cnt=%d", &cnt)
			lb, ub, c := Bucket(h, hdt, v.dt, i)
			if lb != raw || c != cnt {
				t.Errorf("%s voi %d: golden %q, ours lbraw=%#016x cnt=%d", where, id, l, lb, c)
			}
			if hdt == voi.DRHist32 || hdt == voi.DRHist64 {
				want := "ub=" + layoutNum(v.dt, ub) + " "
				if !strings.Contains(l, want) {
					t.Errorf("%s voi %d: golden %q, ours %s", where, id, l, want)
				}
			}
		}
	}
	return checks
}

// layoutNum is the layout dump's num() of a bound of VOI type dt.
func layoutNum(dt voi.DType, v uint64) string {
	switch dt {
	case voi.IntS32:
		return strconv.FormatInt(int64(int32(v)), 10)
	case voi.IntU32:
		return strconv.FormatUint(uint64(uint32(v)), 10)
	case voi.IntS64, voi.IntSLong:
		return strconv.FormatInt(int64(v), 10)
	case voi.IntU64, voi.IntULong:
		return strconv.FormatUint(v, 10)
	case voi.QS32, voi.QU32:
		return fmt.Sprintf("q32raw=0x%08x", uint32(v))
	}
	return fmt.Sprintf("q64raw=0x%016x", v)
}

func TestGoldenBuildAndUpdate(t *testing.T) {
	if LBoundInf != golden.LBInf || UBoundInf != golden.UBInf {
		t.Fatal("the scenario language's histogram flags are not hist's")
	}
	total := 0
	for _, name := range goldenScenarios {
		t.Run(name, func(t *testing.T) {
			n := replay(t, name)
			if n == 0 {
				// 26, 29 and 35 never dump histogram bytes: only their
				// template results are checked here (renderings are
				// checked by package tostr).
				t.Logf("%s: no histogram bytes dumped", name)
			}
			total += n
		})
	}
	t.Logf("%d histogram data comparisons", total)
}

package tostr

// Histogram renderings against the C reference's golden outputs: the data of
// every histogram is taken from the golden's own dumps (dump hex, or dump
// layout), rendered with appendHist and looked up in the renderings the C
// printed afterwards (dump freeform/json, fetch, visit), before the blob
// changes.

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/voi"
)

// histRec is one histogram statistic of a dumped blob.
type histRec struct {
	voiID      int
	voiDT, hdt voi.DType
	data       []byte
}

// histFromHex finds the histogram statistics in a blob's bytes.
func histFromHex(b []byte) []histRec {
	if len(b) < 32 {
		return nil
	}
	var hs []histRec
	nvois := (int(binary.LittleEndian.Uint16(b[12:])) - 32) / 8
	for id := 0; id < nvois; id++ {
		vo := 32 + 8*id
		if int16(binary.LittleEndian.Uint16(b[vo:])) < 0 || int8(b[vo+3]) < int8(voi.Hist) {
			continue
		}
		so := int(binary.LittleEndian.Uint16(b[vo+4:])) + 8*int(voi.Hist)
		off, dsz := int(binary.LittleEndian.Uint16(b[so+2:])), int(binary.LittleEndian.Uint16(b[so+4:]))
		if int8(b[so]) != int8(voi.Hist) || off+dsz > len(b) {
			continue
		}
		hs = append(hs, histRec{id, voi.DType(b[vo+2]), voi.DType(b[so+1]), b[off : off+dsz]})
	}
	return hs
}

// histParseNum reads a bound as dump layout prints it (FORMAT.md 7.4 num).
func histParseNum(dt voi.DType, s string) (uint64, error) {
	if h, ok := strings.CutPrefix(s, "q32raw=0x"); ok {
		return strconv.ParseUint(h, 16, 64)
	}
	if h, ok := strings.CutPrefix(s, "q64raw=0x"); ok {
		return strconv.ParseUint(h, 16, 64)
	}
	if dt.Signed() {
		v, err := strconv.ParseInt(s, 10, 64)
		return uint64(v), err
	}
	return strconv.ParseUint(s, 10, 64)
}

// histFromLayout rebuilds the histogram statistics from dump layout lines.
// A 32-bit DR upper bound is known by its low half only, which is all a
// rendering reads.
func histFromLayout(t *testing.T, lines []string) []histRec {
	var hs []histRec
	var cur *histRec
	var voiID int
	var voiDT voi.DType
	for _, l := range lines {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "voi["):
			cur = nil
			var i, at int
			var dts string
			fmt.Sscanf(l, "voi[%d]@%d: id=%d dtype=%s", &i, &at, &voiID, &dts)
			voiDT, _ = voi.ParseDType(dts)
		case strings.HasPrefix(l, "voistat["):
			cur = nil
			if !strings.Contains(l, "stype=HIST ") {
				continue
			}
			var dts string
			var off, dsz int
			fmt.Sscanf(l[strings.Index(l, "dtype="):], "dtype=%s data_off=%d dsz=%d", &dts, &off, &dsz)
			hdt, _ := voi.ParseDType(dts)
			hs = append(hs, histRec{voiID, voiDT, hdt, make([]byte, dsz)})
			cur = &hs[len(hs)-1]
		case cur != nil && strings.HasPrefix(l, "oob="):
			var oob uint64
			fmt.Sscanf(l, "oob=%d", &oob)
			binary.LittleEndian.PutUint64(cur.data, oob)
		case cur != nil && strings.HasPrefix(l, "bkt["):
			var i int
			var lb, cnt uint64
			fmt.Sscanf(l, "bkt[%d]: lbraw=0x%x", &i, &lb)
			fmt.Sscanf(l[strings.LastIndex(l, "cnt="):], "cnt=%d", &cnt)
			dr := cur.hdt == voi.DRHist32 || cur.hdt == voi.DRHist64
			bsz, coff := 16, 8
			if dr {
				bsz, coff = 24, 16
				f := strings.Fields(l)
				ub, err := histParseNum(cur.voiDT, strings.TrimPrefix(f[len(f)-2], "ub="))
				if err != nil {
					t.Fatalf("%q: %v", l, err)
				}
				binary.LittleEndian.PutUint64(cur.data[8+i*bsz+8:], ub)
			}
			binary.LittleEndian.PutUint64(cur.data[8+i*bsz:], lb)
			if cur.hdt == voi.CRHist32 || cur.hdt == voi.DRHist32 || cur.hdt == voi.DVHist32 {
				binary.LittleEndian.PutUint32(cur.data[8+i*bsz+coff:], uint32(cnt))
			} else {
				binary.LittleEndian.PutUint64(cur.data[8+i*bsz+coff:], cnt)
			}
		}
	}
	return hs
}

// histFindRender checks that want appears in text after prefix and ends
// there (no further bucket follows).
func histFindRender(text, prefix, want, suffix string) bool {
	for rest := text; ; {
		i := strings.Index(rest, prefix+want)
		if i < 0 {
			return false
		}
		after := rest[i+len(prefix)+len(want):]
		if strings.HasPrefix(after, suffix) && !strings.HasPrefix(after, "\n\t\t\t\t") {
			return true
		}
		rest = after
	}
}

func TestHistRenderingsGolden(t *testing.T) {
	files, err := filepath.Glob("../testdata/conformance/golden/*.out")
	if err != nil || len(files) == 0 {
		t.Fatalf("goldens: %v", err)
	}
	checks := 0
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		type blk struct {
			tok []string
			out []string
		}
		var bs []blk
		for _, line := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
			if rest, ok := strings.CutPrefix(line, "> "); ok {
				bs = append(bs, blk{tok: strings.Fields(rest)})
			} else if len(bs) > 0 {
				bs[len(bs)-1].out = append(bs[len(bs)-1].out, line)
			}
		}
		name := filepath.Base(file)
		state := map[string][]histRec{} // blob -> its histograms as last dumped
		cur := ""
		for _, b := range bs {
			c := b.tok
			arg := func(i int, def string) string {
				if i < len(c) {
					return c[i]
				}
				return def
			}
			text := strings.Join(b.out, "\n")
			ok := len(b.out) > 0 && strings.Contains(b.out[0], "= OK")
			switch c[0] {
			case "blob":
				cur = arg(1, "b")
				delete(state, cur)
			case "init":
				delete(state, c[1])
				if ok {
					cur = c[1]
				}
			case "use":
				cur = c[1]
			case "destroy":
				delete(state, c[1])
			case "update", "updates":
				delete(state, cur)
			case "snapshot", "clone_into", "clone":
				delete(state, c[1])
				if c[len(c)-1] == "reset" {
					delete(state, cur)
				}
			case "dump":
				kind, blob := c[1], arg(2, cur)
				switch {
				case kind == "hex":
					var hx []byte
					for _, l := range b.out[1:] {
						if _, r, ok := strings.Cut(l, ":"); ok {
							x, err := hex.DecodeString(strings.ReplaceAll(r, " ", ""))
							if err != nil {
								t.Fatalf("%s: %q", name, l)
							}
							hx = append(hx, x...)
						}
					}
					state[blob] = histFromHex(hx)
				case kind == "layout":
					if !strings.HasPrefix(b.out[0], "layout: blob truncated") {
						state[blob] = histFromLayout(t, b.out)
					}
				case strings.HasPrefix(kind, "freeform") || strings.HasPrefix(kind, "json"):
					if !ok {
						continue
					}
					f, prefix, suffix := FreeForm, "voistatdata: ", "\n"
					if strings.HasPrefix(kind, "json") {
						f, prefix, suffix = JSON, "", "}"
					}
					objdump := strings.Contains(kind, "objdump")
					for _, h := range state[blob] {
						want := string(appendHist(nil, h.data, h.voiDT, h.hdt, f, objdump))
						checks++
						if !histFindRender(text+"\n", prefix, want, suffix) {
							t.Errorf("%s: %v: voi %d %v rendering not found:\n%s\nin\n%s", name, c, h.voiID, h.hdt, want, text)
						}
					}
				}
			case "fetch":
				if len(c) != 3 || !ok || !strings.Contains(text, "dtype=") || !strings.Contains(b.out[0], "HIST") {
					continue
				}
				id, _ := strconv.Atoi(c[1])
				for _, h := range state[cur] {
					if h.voiID != id {
						continue
					}
					ff := string(appendHist(nil, h.data, h.voiDT, h.hdt, FreeForm, false))
					js := string(appendHist(nil, h.data, h.voiDT, h.hdt, JSON, false))
					checks++
					if !strings.Contains(text, " value="+ff+" json="+js) {
						t.Errorf("%s: %v: rendering not found:\n%s\n%s\nin\n%s", name, c, ff, js, text)
					}
				}
			case "visit":
				for _, h := range state[cur] {
					want := string(appendHist(nil, h.data, h.voiDT, h.hdt, FreeForm, false))
					checks++
					if !histFindRender(text+"\n", "stype=HIST", "", "") || !histFindRender(text+"\n", "data=", want, "\n") {
						t.Errorf("%s: visit: voi %d rendering not found:\n%s\nin\n%s", name, h.voiID, want, text)
					}
				}
			}
		}
	}
	if checks < 50 {
		t.Errorf("only %d histogram renderings checked", checks)
	}
	t.Logf("%d histogram renderings checked", checks)
}

// TestHistRenderingNotHist renders nothing for data of another type, as
// the C does.
func TestHistRenderingNotHist(t *testing.T) {
	if got := appendHist([]byte("x"), make([]byte, 24), voi.IntU32, voi.TDgstClust32, JSON, true); string(got) != "x" {
		t.Errorf("got %q", got)
	}
	d, err := hist.Spec{DType: voi.DVHist64, Scheme: hist.Usr, Buckets: []hist.Bound{{LB: 1, UB: 1}, {LB: 2, UB: 2}}}.Build(voi.IntS64)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(appendHist(nil, d, voi.IntS64, voi.DVHist64, JSON, true)); got != `"nbkts":2,"oob":0,"bkts":[{"bkt":0,"lb":1,"ub":1,"cnt":0},{"bkt":1,"lb":2,"ub":2,"cnt":0}]` {
		t.Errorf("got %s", got)
	}
	if got := string(appendHist(nil, d, voi.IntS64, voi.DVHist64, FreeForm, true)); got != "nbkts=2, oob=0\n\t\t\t\tbkt[0].{lb=1,ub=1,cnt=0}\n\t\t\t\tbkt[1].{lb=2,ub=2,cnt=0}" {
		t.Errorf("got %q", got)
	}
}

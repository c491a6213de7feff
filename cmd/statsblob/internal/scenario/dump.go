package scenario

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tostr"
	"github.com/statsblob/statsblob/voi"
)

func (r *Runner) cmdDump(args []string) error {
	if err := need(args, 1); err != nil {
		return err
	}
	kind := args[0]
	switch kind {
	case "hex", "layout":
		name, rb, err := r.blobArg(args, 1)
		if err != nil {
			return err
		}
		if kind == "hex" {
			cursz, maxsz := abi.CurSz(rb.buf), abi.MaxSz(rb.buf)
			n := min(cursz, rb.bufsz)
			r.printf("blob %s: cursz=%d maxsz=%d bufsz=%d (dumping %d)\n", name, cursz, maxsz, rb.bufsz, n)
			r.hexLines(rb.buf[:n])
		} else {
			r.layout(rb.buf[:rb.bufsz])
		}
		return nil
	case "tplhex", "tpllayout":
		t, err := r.tplArg(args, 1)
		if err != nil {
			return err
		}
		tb := t.t.Bytes()
		if kind == "tplhex" {
			r.printf("template %s: cursz=%d maxsz=%d\n", t.name, abi.CurSz(tb), abi.MaxSz(tb))
			r.hexLines(tb[:abi.CurSz(tb)])
		} else {
			r.layout(tb[:abi.CurSz(tb)])
		}
		return nil
	}
	format, flagStr, _ := strings.Cut(kind, "_")
	var o tostr.Options
	switch format {
	case "freeform":
		o.Format = tostr.FreeForm
	case "json":
		o.Format = tostr.JSON
	default:
		return fmt.Errorf("%w: dump kind %q", errSyntax, kind)
	}
	switch flagStr {
	case "":
	case "objdump":
		o.Flags = tostr.Objdump
	case "meta":
		o.Flags = tostr.Meta
	case "objdump_meta":
		o.Flags = tostr.Objdump | tostr.Meta
	default:
		return fmt.Errorf("%w: dump kind %q", errSyntax, kind)
	}
	o.Registry = r.reg
	name, rb, err := r.blobArg(args, 1)
	if err != nil {
		return err
	}
	bl, err := r.engine(rb)
	if err != nil {
		return err
	}
	text, res := tostr.Append(nil, bl, o)
	text = ptrRE.ReplaceAll(text, []byte("statsblobv1@0xPTR"))
	flags := ""
	if o.Flags&tostr.Objdump != 0 {
		flags += "|OBJDUMP"
	}
	if o.Flags&tostr.Meta != 0 {
		flags += "|META"
	}
	r.printf("tostr(%s, %s%s) = %s, len=%d\n%s\n", name, o.Format, flags, rcErr(res), len(text), text)
	return nil
}

var ptrRE = regexp.MustCompile(`statsblobv1@0x[0-9a-fA-F]+`)

// hexLines prints p 16 bytes a line (FORMAT.md 7.1).
func (r *Runner) hexLines(p []byte) {
	var sb strings.Builder
	for o := 0; o < len(p); o += 16 {
		fmt.Fprintf(&sb, "%04x:", o)
		for _, c := range p[o:min(o+16, len(p))] {
			fmt.Fprintf(&sb, " %02x", c)
		}
		sb.WriteByte('\n')
	}
	r.printf("%s", sb.String())
}

// numSize is how many bytes num reads for dtype t.
func numSize(t voi.DType) int {
	if t.Is32() {
		return 4
	}
	return 8
}

// num renders the value at p as dtype t for layout dumps (FORMAT.md 7.4).
func num(b []byte, p int, t voi.DType) string {
	switch t {
	case voi.IntS32:
		return fmt.Sprint(int32(abi.U32(b, p)))
	case voi.IntU32:
		return fmt.Sprint(abi.U32(b, p))
	case voi.IntS64, voi.IntSLong:
		return fmt.Sprint(int64(abi.U64(b, p)))
	case voi.IntU64, voi.IntULong:
		return fmt.Sprint(abi.U64(b, p))
	case voi.QS32, voi.QU32:
		return fmt.Sprintf("q32raw=0x%08x", abi.U32(b, p))
	}
	return fmt.Sprintf("q64raw=0x%016x", abi.U64(b, p))
}

// layout is the runner's own decoding of blob bytes (FORMAT.md 7.4). It
// trusts nothing but len(b).
func (r *Runner) layout(b []byte) {
	if len(b) < abi.HeaderSize || abi.CurSz(b) > len(b) {
		cursz := 0
		if len(b) >= abi.MinBlobSz {
			cursz = abi.CurSz(b)
		}
		r.printf("layout: blob truncated (cursz=%d bufsz=%d)\n", cursz, len(b))
		return
	}
	statsOff, dataOff := abi.StatsOff(b), abi.StatsDataOff(b)
	nvois := (statsOff - abi.HeaderSize) / abi.VOISize
	nstats := (dataOff - statsOff) / abi.StatSize
	r.printf("hdr: abi=%d endian=%d flags=0x%04x maxsz=%d cursz=%d tplhash=%d stats_off=%d statsdata_off=%d created=%d lastrst=%d nvois=%d nvoistats=%d\n",
		b[abi.OffABI], b[abi.OffEndian], abi.U16(b, abi.OffFlags), abi.MaxSz(b), abi.CurSz(b), abi.U32(b, abi.OffTplHash), statsOff, dataOff,
		int64(abi.U64(b, abi.OffCreated)), int64(abi.U64(b, abi.OffLastRst)), nvois, nstats)
	in := func(off, n int) bool { return off >= 0 && off+n <= len(b) }
	for i := 0; i < nvois; i++ {
		vo := abi.VOIAt(i)
		if !in(vo, abi.VOISize) {
			return
		}
		v := abi.ReadVOI(b, vo)
		r.printf("voi[%d]@%d: id=%d dtype=%s voistatmaxid=%d stats_off=%d flags=0x%04x\n", i, vo, v.ID, v.DType, v.MaxID, v.StatsOff, v.Flags)
		if v.ID < 0 {
			continue
		}
		for j := 0; j <= int(v.MaxID); j++ {
			so := int(v.StatsOff) + abi.StatSize*j
			if !in(so, abi.StatSize) {
				return
			}
			st := abi.ReadStat(b, so)
			r.printf("  voistat[%d]@%d: stype=%s dtype=%s data_off=%d dsz=%d errs=%d flags=0x%02x\n",
				j, so, voi.STypeName(int(st.SType)), st.DType, st.DataOff, st.DSz, st.Errs, st.Flags)
			if st.SType < 0 {
				continue
			}
			r.layoutData(b, v.DType, st.DType, int(st.DataOff), int(st.DSz))
		}
	}
}

func (r *Runner) layoutData(b []byte, vdt, dt voi.DType, d, dsz int) {
	in := func(off, n int) bool { return off >= 0 && off+n <= len(b) }
	switch {
	case dt == voi.VoiState:
		if in(d, numSize(vdt)) {
			r.printf("    prev=%s\n", num(b, d, vdt))
		}
	case dt.IsNumeric():
		if in(d, numSize(dt)) {
			r.printf("    val=%s\n", num(b, d, dt))
		}
	case dt.IsHist():
		g, _ := hist.GeometryOf(dt)
		count := func(off int) uint64 {
			if g.Count32 {
				return uint64(abi.U32(b, off))
			}
			return abi.U64(b, off)
		}
		nb := (dsz - g.Header) / g.Size
		if !in(d, g.Header) {
			return
		}
		r.printf("    oob=%d nbkts=%d bktsz=%d\n", count(d), nb, g.Size)
		for k := 0; k < nb; k++ {
			bk := d + g.Header + g.Size*k
			if !in(bk, g.Size) {
				return
			}
			if g.Bounds == 2 {
				r.printf("    bkt[%d]: lbraw=0x%016x lb=%s ub=%s cnt=%d\n", k, abi.U64(b, bk), num(b, bk, vdt), num(b, bk+8, vdt), count(bk+g.CountOff))
			} else {
				r.printf("    bkt[%d]: lbraw=0x%016x lb=%s cnt=%d\n", k, abi.U64(b, bk), num(b, bk, vdt), count(bk+g.CountOff))
			}
		}
	case dt.IsTDigest():
		hdr, nsz := tdigest.Size(dt, 0), tdigest.Size(dt, 1)-tdigest.Size(dt, 0)
		if !in(d, hdr) {
			return
		}
		info, _ := tdigest.ReadInfo(b[d:], dt)
		r.printf("    smplcnt=%d compcnt=%d arb: cur=%d max=%d root=%d free=%d min=%d max_idx=%d\n",
			info.SmplCnt, info.CompCnt, info.CurNodes, info.MaxNodes, info.Root, info.Free, info.Min, info.Max)
		for k := 0; k < int(info.MaxNodes) && hdr+nsz*k < dsz; k++ {
			if !in(d+hdr+nsz*k, nsz) {
				return
			}
			c := tdigest.ReadCentroid(b[d:], dt, k)
			if dt == voi.TDgstClust32 {
				r.printf("    ctd[%d]: parent=%d left=%d right=%d color=%d muraw=0x%08x cnt=%d\n",
					k, c.Parent, c.Left, c.Right, c.Color, c.Mu.Raw, int32(c.Count))
			} else {
				r.printf("    ctd[%d]: parent=%d left=%d right=%d color=%d muraw=0x%016x cnt=%d\n",
					k, c.Parent, c.Left, c.Right, c.Color, c.Mu.Raw, int64(c.Count))
			}
		}
	}
}

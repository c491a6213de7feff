package scenario

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/statsblob/statsblob/internal/abi"
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
func numSize(t uint8) int {
	if voi.DType(t).Is32() {
		return 4
	}
	return 8
}

// num renders the value at p as dtype t for layout dumps (FORMAT.md 7.4).
func num(b []byte, p int, t uint8) string {
	switch voi.DType(t) {
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
	statsOff, dataOff := int(abi.U16(b, 12)), int(abi.U16(b, 14))
	nvois := (statsOff - 32) / 8
	nstats := (dataOff - statsOff) / 8
	r.printf("hdr: abi=%d endian=%d flags=0x%04x maxsz=%d cursz=%d tplhash=%d stats_off=%d statsdata_off=%d created=%d lastrst=%d nvois=%d nvoistats=%d\n",
		b[0], b[1], abi.U16(b, 2), abi.U16(b, 4), abi.U16(b, 6), abi.U32(b, 8), statsOff, dataOff,
		int64(abi.U64(b, 16)), int64(abi.U64(b, 24)), nvois, nstats)
	in := func(off, n int) bool { return off >= 0 && off+n <= len(b) }
	for i := 0; i < nvois; i++ {
		vo := 32 + 8*i
		if !in(vo, 8) {
			return
		}
		id, vdt, maxid := int16(abi.U16(b, vo)), b[vo+2], int8(b[vo+3])
		soff, vfl := int(abi.U16(b, vo+4)), abi.U16(b, vo+6)
		r.printf("voi[%d]@%d: id=%d dtype=%s voistatmaxid=%d stats_off=%d flags=0x%04x\n", i, vo, id, voi.DType(vdt), maxid, soff, vfl)
		if id < 0 {
			continue
		}
		for j := 0; j <= int(maxid); j++ {
			so := soff + 8*j
			if !in(so, 8) {
				return
			}
			st, sdt, doff, dsz := int8(b[so]), b[so+1], int(abi.U16(b, so+2)), int(abi.U16(b, so+4))
			r.printf("  voistat[%d]@%d: stype=%s dtype=%s data_off=%d dsz=%d errs=%d flags=0x%02x\n",
				j, so, voi.STypeName(int(st)), voi.DType(sdt), doff, dsz, b[so+6], b[so+7])
			if st < 0 {
				continue
			}
			r.layoutData(b, vdt, sdt, doff, dsz)
		}
	}
}

func (r *Runner) layoutData(b []byte, vdt, sdt uint8, d, dsz int) {
	in := func(off, n int) bool { return off >= 0 && off+n <= len(b) }
	switch dt := voi.DType(sdt); {
	case dt == voi.VoiState:
		if in(d, numSize(vdt)) {
			r.printf("    prev=%s\n", num(b, d, vdt))
		}
	case dt.IsNumeric():
		if in(d, numSize(sdt)) {
			r.printf("    val=%s\n", num(b, d, sdt))
		}
	case dt.IsHist():
		is32 := dt == voi.CRHist32 || dt == voi.DRHist32 || dt == voi.DVHist32
		dr := dt == voi.DRHist32 || dt == voi.DRHist64
		bsz := 16
		if dr {
			bsz = 24
		}
		nb := (dsz - 8) / bsz
		if !in(d, 8) {
			return
		}
		oob := abi.U64(b, d)
		if is32 {
			oob = uint64(abi.U32(b, d))
		}
		r.printf("    oob=%d nbkts=%d bktsz=%d\n", oob, nb, bsz)
		for k := 0; k < nb; k++ {
			bk := d + 8 + bsz*k
			co := bk + 8
			if dr {
				co = bk + 16
			}
			if !in(bk, bsz) {
				return
			}
			cnt := abi.U64(b, co)
			if is32 {
				cnt = uint64(abi.U32(b, co))
			}
			if dr {
				r.printf("    bkt[%d]: lbraw=0x%016x lb=%s ub=%s cnt=%d\n", k, abi.U64(b, bk), num(b, bk, vdt), num(b, bk+8, vdt), cnt)
			} else {
				r.printf("    bkt[%d]: lbraw=0x%016x lb=%s cnt=%d\n", k, abi.U64(b, bk), num(b, bk, vdt), cnt)
			}
		}
	case dt.IsTDigest():
		is32 := dt == voi.TDgstClust32
		h, base, nsz := d+16, d+32, 24
		if is32 {
			h, base, nsz = d+8, d+20, 16
		}
		if !in(d, base-d) {
			return
		}
		smpl := abi.U64(b, d)
		comp := abi.U32(b, d+8)
		if is32 {
			smpl, comp = uint64(abi.U32(b, d)), abi.U32(b, d+4)
		}
		s16 := func(o int) int16 { return int16(abi.U16(b, o)) }
		maxn := int(s16(h + 2))
		r.printf("    smplcnt=%d compcnt=%d arb: cur=%d max=%d root=%d free=%d min=%d max_idx=%d\n",
			smpl, comp, s16(h), s16(h+2), s16(h+4), s16(h+6), s16(h+8), s16(h+10))
		hdr := base - d
		for k := 0; k < maxn && hdr+nsz*k < dsz; k++ {
			n := base + nsz*k
			if !in(n, nsz) {
				return
			}
			if is32 {
				r.printf("    ctd[%d]: parent=%d left=%d right=%d color=%d muraw=0x%08x cnt=%d\n",
					k, s16(n), s16(n+2), s16(n+4), int8(b[n+6]), abi.U32(b, n+8), int32(abi.U32(b, n+12)))
			} else {
				r.printf("    ctd[%d]: parent=%d left=%d right=%d color=%d muraw=0x%016x cnt=%d\n",
					k, s16(n), s16(n+2), s16(n+4), int8(b[n+6]), abi.U64(b, n+8), int64(abi.U64(b, n+16)))
			}
		}
	}
}

package scenario

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/internal/golden"
	"github.com/statsblob/statsblob/internal/stream"
	"github.com/statsblob/statsblob/sample"
	"github.com/statsblob/statsblob/tostr"
	"github.com/statsblob/statsblob/voi"
)

// updateValue converts a scenario value token to the bits passed to the
// engine for dtype d (FORMAT.md 6.7).
func updateValue(d golden.DType, tok string) (uint64, error) {
	dt := voi.DType(0)
	if d.N > 0 && d.N < int(voi.NumDTypes) {
		dt = voi.DType(d.N)
	}
	if dt.IsQ() {
		return golden.Q(dt, d.Prec, tok)
	}
	v, err := parseInt(tok)
	if err != nil {
		return 0, err
	}
	if dt.Is32() {
		v = uint64(uint32(v))
	}
	return v, nil
}

// updateHead parses the mode (abs or rel) and the VOI id that begin the
// update and updates commands, which take n arguments at least.
func updateHead(args []string, n int) (mode string, id int32, err error) {
	if err := need(args, n); err != nil {
		return "", 0, err
	}
	mode = args[0]
	if mode != "abs" && mode != "rel" {
		return "", 0, fmt.Errorf("%w: update mode %q", errSyntax, mode)
	}
	idv, err := parseInt(args[1])
	return mode, int32(idv), err
}

func (r *Runner) cmdUpdate(args []string) error {
	mode, id, err := updateHead(args, 3)
	if err != nil {
		return err
	}
	_, rb, err := r.blobArg(nil, 0)
	if err != nil {
		return err
	}
	var d golden.DType
	switch {
	case len(args) >= 5 && args[3] == "as":
		if d, err = golden.ParseDType(args[4]); err != nil {
			return err
		}
	default:
		rec, ok := rb.tpl.vois[id]
		if !ok {
			return fmt.Errorf("%w: update of unrecorded VOI %d without 'as'", errSyntax, id)
		}
		d = golden.DType{N: int(rec.dt), Prec: rec.prec}
	}
	bits, err := updateValue(d, args[2])
	if err != nil {
		return err
	}
	bl, err := r.engine(rb)
	if err != nil {
		return err
	}
	res := bl.Update(id, d.Engine(), bits, mode == "rel")
	r.printf("update_%s_%s(voi=%d, %s) = %s\n", mode, d.Name(), id, args[2], rcErr(res))
	return nil
}

// maxUpdates bounds one updates command (the largest public scenario uses
// 10^5), so that no scenario runs for hours.
const maxUpdates = 1 << 24

func (r *Runner) cmdUpdates(args []string) error {
	mode, id, err := updateHead(args, 4)
	if err != nil {
		return err
	}
	n, err := parseInt(args[2])
	if err != nil {
		return err
	}
	if n > maxUpdates {
		return fmt.Errorf("%w: updates of %d values (at most %d)", errSyntax, n, maxUpdates)
	}
	distName := args[3]
	dist, err := stream.ParseDist(distName)
	if err != nil {
		return err
	}
	_, rb, err := r.blobArg(nil, 0)
	if err != nil {
		return err
	}
	rec, ok := rb.tpl.vois[id]
	if !ok {
		return fmt.Errorf("%w: updates of unrecorded VOI %d", errSyntax, id)
	}
	bl, err := r.engine(rb)
	if err != nil {
		return err
	}
	var errs int
	var first error
	var sum uint64
	for i := uint64(0); i < n; i++ {
		x := dist(r.stream.Next())
		sum += x
		v := x
		switch {
		case rec.dt.IsQ():
			v = golden.QFromInt(rec.dt, rec.prec, x)
		case rec.dt.Is32():
			v = uint64(uint32(x))
		}
		if res := bl.Update(id, rec.dt, v, mode == "rel"); res != nil {
			if errs == 0 {
				first = res
			}
			errs++
		}
	}
	r.printf("updates_%s_%s(voi=%d, n=%d, %s): errors=%d first=%s valuesum=%d prng_calls=%d\n",
		mode, rec.dt, id, n, distName, errs, rcErr(first), sum, r.rand.Calls())
	return nil
}

func (r *Runner) cmdFetch(args []string) error {
	if err := need(args, 2); err != nil {
		return err
	}
	idv, err := parseInt(args[0])
	if err != nil {
		return err
	}
	id := int32(idv)
	st, err := golden.ParseSType(args[1])
	if err != nil {
		return err
	}
	_, rb, err := r.blobArg(nil, 0)
	if err != nil {
		return err
	}
	bl, err := r.engine(rb)
	if err != nil {
		return err
	}
	stype := voi.SType(0)
	inRange := st >= 0 && st <= 127
	if inRange {
		stype = voi.SType(st)
	}
	if len(args) >= 4 && args[2] == "as" {
		return r.fetchAs(bl, id, st, stype, inRange, args[3])
	}
	var s blob.Stat
	res := voi.ErrInvalid
	if inRange {
		s, res = bl.Fetch(id, stype)
	}
	r.printf("fetch_dptr(voi=%d, %s) = %s", id, voi.STypeName(st), rcErr(res))
	if res == nil {
		r.printf(" dtype=%s dsz=%d data_off=%d", s.DType, len(s.Data), s.Offset)
		if rec, ok := rb.tpl.vois[id]; ok && len(s.Data) > 0 {
			ff := tostr.AppendData(nil, s.Data, rec.dt, s.DType, tostr.FreeForm, false)
			js := tostr.AppendData(nil, s.Data, rec.dt, s.DType, tostr.JSON, false)
			r.printf(" value=%s json=%s", ff, js)
		}
	}
	r.printf("\n")
	return nil
}

func (r *Runner) fetchAs(bl *blob.Blob, id int32, st int, stype voi.SType, inRange bool, t string) error {
	var val string
	var res error = voi.ErrInvalid
	if inRange {
		switch t {
		case "s32":
			var v int32
			v, res = bl.FetchS32(id, stype)
			val = strconv.FormatInt(int64(v), 10)
		case "u32":
			var v uint32
			v, res = bl.FetchU32(id, stype)
			val = strconv.FormatUint(uint64(v), 10)
		case "s64":
			var v int64
			v, res = bl.FetchS64(id, stype)
			val = strconv.FormatInt(v, 10)
		case "u64":
			var v uint64
			v, res = bl.FetchU64(id, stype)
			val = strconv.FormatUint(v, 10)
		case "slong":
			var v int64
			v, res = bl.FetchSLong(id, stype)
			val = strconv.FormatInt(v, 10)
		case "ulong":
			var v uint64
			v, res = bl.FetchULong(id, stype)
			val = strconv.FormatUint(v, 10)
		default:
			return fmt.Errorf("%w: fetch type %q", errSyntax, t)
		}
	}
	if res != nil {
		val = "0"
	}
	r.printf("fetch_%s(voi=%d, %s) = %s val=%s\n", t, id, voi.STypeName(st), rcErr(res), val)
	return nil
}

func (r *Runner) cmdSnapshot(args []string) error { return r.snapshot("snapshot", args) }
func (r *Runner) cmdClone(args []string) error    { return r.snapshot("clone", args) }

func (r *Runner) snapshot(kind string, args []string) error {
	if err := need(args, 1); err != nil {
		return err
	}
	reset := kind == "snapshot" && len(args) > 1 && args[1] == "reset"
	src, rb, err := r.blobArg(nil, 0)
	if err != nil {
		return err
	}
	bl, err := r.engine(rb)
	if err != nil {
		return err
	}
	c := bl.Snapshot(reset)
	if kind == "snapshot" {
		rs := ""
		if reset {
			rs = "|RSTSRC"
		}
		r.printf("snapshot(%s -> %s, ALLOCDST%s) = OK\n", src, args[0], rs)
	} else {
		r.printf("clone(%s -> %s, ALLOCDST) = OK\n", src, args[0])
	}
	r.storeBlob(args[0], &runBlob{buf: c.Buffer(), bufsz: c.CurSz(), tpl: rb.tpl})
	r.printf("  new %s: cursz=%d maxsz=%d bufsz=%d\n", args[0], c.CurSz(), c.MaxSz(), c.CurSz())
	return nil
}

func (r *Runner) cmdCloneInto(args []string) error {
	if err := need(args, 2); err != nil {
		return err
	}
	maxsz, err := parseInt(args[1])
	if err != nil {
		return err
	}
	if maxsz > blobLimit {
		return fmt.Errorf("%w: clone_into size %d", errSyntax, maxsz)
	}
	reset := len(args) > 2 && args[2] == "reset"
	src, rb, err := r.blobArg(nil, 0)
	if err != nil {
		return err
	}
	bl, err := r.engine(rb)
	if err != nil {
		return err
	}
	buf := newBuffer(maxsz)
	res := bl.SnapshotInto(buf, int(maxsz), reset)
	rs := ""
	if reset {
		rs = ", RSTSRC"
	}
	r.printf("snapshot(%s -> %s, dstmaxsz=%d%s) = %s\n", src, args[0], maxsz, rs, rcErr(res))
	r.storeBlob(args[0], &runBlob{buf: buf, bufsz: int(maxsz), tpl: rb.tpl})
	r.printf("  dst %s: cursz=%d maxsz=%d bufsz=%d\n", args[0], abi.CurSz(buf), abi.MaxSz(buf), maxsz)
	return nil
}

func (r *Runner) cmdVisit(args []string) error {
	stop := 0
	if len(args) > 0 {
		stop = golden.Atoi(args[0])
	}
	name, rb, err := r.blobArg(nil, 0)
	if err != nil {
		return err
	}
	bl, err := r.engine(rb)
	if err != nil {
		return err
	}
	n := 0
	// stats_blob_visit: the walk without vacant slots, VOI states
	// included, the flags as the visitor sees them.
	hash := bl.TplHash()
	for v := range abi.Walk(bl.Buffer(), 0) {
		data := tostr.AppendData(nil, v.Data, v.VOI.DType, v.Stat.DType, tostr.FreeForm, false)
		r.printf("visit[%d]: tplhash=%d voi_id=%d voi_dtype=%s stype=%s vs_dtype=%s dsz=%d errs=%d flags=%s data=%s\n",
			n, hash, v.VOI.ID, v.VOI.DType, v.Stat.SType, v.Stat.DType, int16(v.Stat.DSz), v.Stat.Errs, v.Flags&(abi.FirstCB|abi.LastCB|abi.FirstVOI|abi.LastVOI|abi.FirstStat|abi.LastStat), data)
		n++
		if stop > 0 && n >= stop {
			break
		}
	}
	r.printf("visit(%s) = OK, callbacks=%d\n", name, n)
	return nil
}

func (r *Runner) cmdTplHash(args []string) error {
	t, err := r.tplArg(args, 0)
	if err != nil {
		return err
	}
	tb := t.t.Bytes()
	h := abi.Hash32Str(0, t.t.Name())
	for i := 0; i < abi.NVOIs(tb); i++ {
		if n, ok := t.t.VOIName(int32(i)); ok {
			h = abi.Hash32Str(h, n)
		}
	}
	h = abi.Hash32(h, tb[:abi.CurSz(tb)])
	hash := t.t.Hash()
	match := "MATCH"
	if h != hash {
		match = "MISMATCH"
	}
	r.printf("tplhash(%s) = %d (0x%08x), recomputed=%d %s, tpl cursz=%d\n", t.t.Name(), hash, hash, h, match, abi.CurSz(tb))
	return nil
}

func (r *Runner) cmdTplSpec(args []string) error {
	t, err := r.tplArg(args, 0)
	if err != nil {
		return err
	}
	r.printf("%s\n", t.t.Spec())
	return nil
}

func (r *Runner) cmdTplID(args []string) error {
	if err := need(args, 1); err != nil {
		return err
	}
	var hash uint32
	if len(args) > 1 {
		v, err := parseInt(args[1])
		if err != nil {
			return err
		}
		hash = uint32(v)
	}
	var id int
	var err error
	name := args[0]
	if name == "-" {
		name = "NULL"
		id, err = r.reg.LookupHash(hash)
	} else {
		id, err = r.reg.LookupName(name, hash)
	}
	if err != nil {
		n := voi.Errno(err)
		r.printf("tpl_fetch_allocid(%s, %d) = %d %s\n", name, hash, -n, rc(-n))
		return nil
	}
	r.printf("tpl_fetch_allocid(%s, %d) = %d\n", name, hash, id)
	return nil
}

func (r *Runner) cmdID2Name(args []string) error {
	if err := need(args, 2); err != nil {
		return err
	}
	idv, err := parseInt(args[0])
	if err != nil {
		return err
	}
	l, err := parseInt(args[1])
	if err != nil {
		return err
	}
	l = min(l, 256)
	res, name := error(nil), ""
	if t, terr := r.reg.ByID(int(uint32(idv))); terr != nil || uint64(uint32(idv)) >= uint64(r.reg.Len()) {
		res = voi.ErrNotFound
	} else if l <= uint64(len(t.Name())) {
		res = voi.ErrOverflow
	} else {
		name = t.Name()
	}
	r.printf("tpl_id2name(%s, len=%d) = %s name=\"%s\"\n", args[0], l, rcErr(res), name)
	return nil
}

func (r *Runner) cmdDice(args []string) error {
	if err := need(args, 2); err != nil {
		return err
	}
	var rates []sample.Rate
	var cum uint32
	for i, item := range strings.Split(args[1], ",") {
		slot, pct := int32(i), item
		if s, p, ok := strings.Cut(item, "="); ok {
			v, err := parseInt(s)
			if err != nil {
				return err
			}
			slot, pct = int32(v), p
		}
		v, err := parseInt(pct)
		if err != nil {
			return err
		}
		rates = append(rates, sample.Rate{TplID: slot, Pct: uint32(v)})
		cum += uint32(v)
	}
	if args[0] == "-" {
		res := sample.Roll(rates, nil, r.rand)
		r.printf("rollthedice(seed=NULL, rates=%s, cum=%d) = %d\n", args[1], cum, res)
		return nil
	}
	seed, err := hex.DecodeString(strings.TrimPrefix(args[0], "0x"))
	if err != nil {
		return fmt.Errorf("%w: seed %q", errSyntax, args[0])
	}
	if seed == nil {
		seed = []byte{}
	}
	res := sample.Roll(rates, seed, r.rand)
	h := abi.Hash32(0, seed)
	r.printf("rollthedice(seed=%s len=%d, rates=%s, cum=%d) = %d [hash32_buf=%d rnd_pct=%d]\n",
		args[0], len(seed), args[1], cum, res, h, sample.Percent(seed))
	return nil
}

func (r *Runner) cmdSizes([]string) error {
	r.printf("%s", `sizeof: statsblob=8 voistatdata_numeric=8 int32=4 int64=8 intlong=8 q32=4 q64=8
hist hdr/bkt: crhist32=8/16 crhist64=8/16 drhist32=8/24 drhist64=8/24 dvhist32=8/16 dvhist64=8/16
tdgst hdr/ctd: clust32=20/16 (ctdtree@8 nodes@20) clust64=32/24 (ctdtree@16 nodes@32)
ctd32: lnk@0 mu@8 cnt@12; ctd64: lnk@0 mu@8 cnt@16
vsd_dtype2size: VOISTATE=8 INT_S32=4 INT_U32=4 INT_S64=8 INT_U64=8 INT_SLONG=8 INT_ULONG=8 Q_S32=4 Q_U32=4 Q_S64=8 Q_U64=8 CRHIST32=8 DRHIST32=8 DVHIST32=8 CRHIST64=8 DRHIST64=8 DVHIST64=8 TDGSTCLUST32=20 TDGSTCLUST64=32
`)
	return nil
}

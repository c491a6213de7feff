// Package gen generates conformance scenarios (the language of
// testdata/conformance/FORMAT.md) at random, deterministically per seed,
// for differential runs of the Go runner against a C reference build.
//
// Every scenario is valid by construction (FORMAT.md section 13): the
// generator keeps a model of the runner's state (templates, their VOI
// records, blobs and their sizes, the current template and blob) and of
// what the C does with the specs it writes (model.go), so it never writes a
// malformed line, an unknown name, an update of an unrecorded VOI without
// `as`, an operation on a failed clone_into or init buffer other than a
// hex or layout dump, or a histogram whose bucket generation wraps or never
// ends. Within those rules it exercises every command of section 6 with
// every VOI data type, statistic type, histogram type, bucket scheme and
// histogram flag combination; Coverage and Cells report which of these
// cells a range of seeds hits.
//
// The package uses only the standard library and its own random source
// (rng.go), so a seed names the same scenario on every platform and Go
// release. Version changes whenever the scenarios of some seed change.
package gen

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Version identifies the generator's output. Digests recorded with one
// version (testdata/conformance/generated) say nothing about another; bump
// it with every change that changes the scenario of any seed.
const Version = 2

// Options tune a scenario.
type Options struct {
	// Commands is the number of commands to write (lines with tokens,
	// give or take the few a step writes together); 0 lets the seed choose
	// a length between a dozen and about a thousand.
	Commands int
}

// Scenario is one generated scenario.
type Scenario struct {
	Seed  uint64
	Lines []string       // the scenario's lines, without line ends
	Cover map[string]int // coverage cells hit, with their counts
	// Expect holds, by index in Lines, what the model expects of some
	// commands' first result line: "OK" (it ends with "= OK"), "FAIL" (it
	// does not) or a text it contains (a blob's sizes). The C's output is
	// the judge; these help tell a model error from an engine error.
	Expect map[int]string
}

// Text returns the scenario as a file's contents.
func (s *Scenario) Text() string {
	var sb strings.Builder
	for _, l := range s.Lines {
		sb.WriteString(l)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// voiRec is a VOI the engine holds in some template.
type voiRec struct {
	id    int32
	dt    int
	prec  int
	rel   bool
	cols  []int // kinds of statistic data, VOISTATE first if rel
	st    [stTDgst + 1]int
	hints []string
}

// tplState is a template: the engine's view (size, VOI slots) and the
// runner's records.
type tplState struct {
	name    string
	id      int
	cursz   int
	nvois   int
	defined map[int32]*voiRec
	defIDs  []int32
	recs    map[int32]*voiRec
	recIDs  []int32
	nextID  int32
}

// blobState is a runner blob.
type blobState struct {
	name   string
	tpl    *tplState
	cursz  int
	bufsz  int
	usable bool // FORMAT.md section 13: a failed init or clone_into buffer is not
	vois   map[int32]*voiRec
	ids    []int32
	// samples counts the values offered to each t-digest VOI since the
	// blob was made or reset (coverage only: digests past 2^16 samples
	// are where the C's defect 7 dropped samples).
	samples map[int32]int
}

type gen struct {
	r      *rng
	lines  []string
	ncmd   int
	last   int // index of the last command line
	cov    map[string]int
	expect map[int]string

	tpls     []*tplState
	tplNames map[string]bool
	cur      *tplState

	blobs     map[string]*blobState
	live      []string
	curBlob   string
	usedNames map[string]bool
}

// Generate returns the scenario of a seed.
func Generate(seed uint64, o Options) *Scenario {
	g := &gen{r: newRNG(seed), cov: map[string]int{}, expect: map[int]string{}, tplNames: map[string]bool{},
		blobs: map[string]*blobState{}, usedNames: map[string]bool{}}
	n := o.Commands
	if n <= 0 {
		n = g.length()
	}
	g.prologue()
	for g.ncmd < n {
		g.step()
	}
	return &Scenario{Seed: seed, Lines: g.lines, Cover: g.cov, Expect: g.expect}
}

func (g *gen) length() int {
	switch k := g.r.intn(100); {
	case k < 20:
		return g.r.between(10, 40)
	case k < 70:
		return g.r.between(40, 150)
	case k < 95:
		return g.r.between(150, 400)
	}
	return g.r.between(400, 1000)
}

func (g *gen) hit(cell string) { g.cov[cell]++ }

// emit writes one command line, sometimes with other whitespace and a
// comment (FORMAT.md section 2).
func (g *gen) emit(toks ...string) {
	r := g.r
	sep := func() string { return " " }
	if r.oneIn(40) {
		g.hit("syntax whitespace")
		sep = func() string { return pick(r, " ", "  ", "\t", " \t ", "\r ") }
	}
	var sb strings.Builder
	if r.oneIn(60) {
		sb.WriteString(pick(r, " ", "\t", "  "))
	}
	for i, t := range toks {
		if i > 0 {
			sb.WriteString(sep())
		}
		sb.WriteString(t)
	}
	if r.oneIn(50) {
		g.hit("syntax comment")
		sb.WriteString(pick(r, " # note", "\t#", "# x y z", " ## a:b(c)"))
	}
	g.lines = append(g.lines, sb.String())
	g.last = len(g.lines) - 1
	g.ncmd++
	if r.oneIn(80) {
		g.hit("syntax empty line")
		g.lines = append(g.lines, pick(r, "", "# comment", "   ", "\t# tab"))
	}
}

func (g *gen) prologue() {
	r := g.r
	if r.oneIn(3) {
		g.seedCmd()
	}
	if r.oneIn(4) {
		g.streamCmd()
	}
	if r.oneIn(5) {
		g.clockCmd()
	}
	if r.oneIn(20) {
		g.hit("sizes")
		g.emit("sizes")
	}
	g.tplCmd()
	if r.pct(85) {
		g.blobCmd()
	}
}

// step writes one action.
func (g *gen) step() {
	w := []int{4, 6, 2, 5, 3, 3, 25, 10, 4, 8, 7, 2, 3, 10, 4, 2, 1}
	if len(g.tpls) >= 32 {
		w[0] = 0
	}
	switch g.r.weighted(w) {
	case 0:
		g.tplCmd()
	case 1:
		g.voiCmds()
	case 2:
		g.useTplCmd()
	case 3:
		g.blobCmd()
	case 4:
		g.initCmd()
	case 5:
		g.useCmd()
	case 6:
		g.updateCmd()
	case 7:
		g.updatesCmd()
	case 8:
		switch g.r.intn(3) {
		case 0:
			g.seedCmd()
		case 1:
			g.streamCmd()
		default:
			g.clockCmd()
		}
	case 9:
		g.fetchCmd()
	case 10:
		g.copyCmd()
	case 11:
		g.destroyCmd()
	case 12:
		g.visitCmd()
	case 13:
		g.dumpCmd()
	case 14:
		g.tplInfoCmd()
	case 15:
		g.diceCmd()
	default:
		g.miscCmd()
	}
}

// ---- templates and VOIs ----

var tplBaseNames = []string{"T", "TCP", "QT", "EDGE", "A", "B", "stats", "Tpl_2", "x", "netflow", "T.v1", "t-b"}

func (g *gen) newTplName() string {
	for {
		n := pick(g.r, tplBaseNames...)
		if g.r.oneIn(2) {
			n += strconv.Itoa(g.r.intn(100))
		}
		if !g.tplNames[n] {
			return n
		}
	}
}

func (g *gen) tplCmd() {
	r := g.r
	if len(g.tpls) >= 32 {
		g.voiCmds()
		return
	}
	name := g.newTplName()
	ok := true
	switch k := r.intn(40); {
	case k == 0 && len(g.tpls) > 0:
		g.hit("tpl duplicate name")
		name, ok = pick(r, g.tpls...).name, false
	case k == 1:
		g.hit("tpl name too long")
		name, ok = strings.Repeat("N", r.between(65, 90)), false
	case k == 2:
		g.hit("tpl name of 64 bytes")
		name = strings.Repeat("L", 63) + strconv.Itoa(len(g.tpls)%10)
		if g.tplNames[name] {
			name, ok = strings.Repeat("M", 66), false
		}
	}
	g.emit("tpl", name)
	if !ok {
		return
	}
	g.hit("tpl")
	t := &tplState{name: name, id: len(g.tpls), cursz: hdrSize, defined: map[int32]*voiRec{}, recs: map[int32]*voiRec{}}
	g.tpls = append(g.tpls, t)
	g.tplNames[name] = true
	g.cur = t
	n := 0
	switch k := r.intn(100); {
	case k < 3:
	case k < 43:
		n = r.between(1, 3)
	case k < 83:
		n = r.between(4, 10)
	case k < 95:
		n = r.between(11, 25)
	default:
		n = r.between(26, 40)
	}
	for range n {
		g.voiCmd(t)
	}
}

func (g *gen) voiCmds() {
	if g.cur == nil {
		g.tplCmd()
		return
	}
	for range g.r.between(1, 3) {
		g.voiCmd(g.cur)
	}
}

var voiBaseNames = []string{"v", "rtt", "cwnd", "bytes", "q", "lat_us", "x.y", "a-b", "V", "n"}

// voiCmd writes a voi line for the current template t.
func (g *gen) voiCmd(t *tplState) {
	r := g.r
	// The id.
	id := t.nextID
	valid := true
	idTok := ""
	switch k := r.intn(100); {
	case k < 80:
		t.nextID++
	case k < 90:
		id = t.nextID + int32(r.between(1, 4))
		t.nextID = id + 1
	case k < 94:
		g.hit("voi sparse id")
		id = int32(r.between(40, 300))
		t.nextID = max(t.nextID, id+1)
	case k < 96:
		g.hit("voi negative id")
		id, valid = pick[int32](r, -1, -7, -2147483648), false
	case k < 98 && len(t.defIDs) > 0:
		g.hit("voi duplicate id")
		id = pick(r, t.defIDs...)
	case k < 99:
		g.hit("voi huge id")
		id = int32(r.between(8200, 40000))
	default:
		g.hit("voi id truncated to int32")
		idTok = strconv.FormatUint(uint64(r.between(1, 3))<<32|uint64(uint32(t.nextID)), 10)
		t.nextID++
	}
	if idTok == "" {
		idTok = strconv.Itoa(int(id))
	}
	// The data type.
	dt := voiDTypes[r.intn(len(voiDTypes))]
	prec := 0
	var dtTok string
	switch k := r.intn(100); {
	case k < 2:
		g.hit("voi dtype 0")
		dt, dtTok = 0, pick(r, "0", "00", "0x0")
	case k < 4:
		g.hit("voi dtype 11..18")
		dt = r.between(dtCR32, dtTD64)
		dtTok = pick(r, dtNames[dt], strconv.Itoa(dt))
	case k < 5:
		g.hit("voi dtype 19 or more")
		dt, dtTok = -1, pick(r, "19", "20", "100000", "-3")
	}
	if dtTok == "" {
		dtTok = g.caseVariant(dtNames[dt])
		if isQ(dt) {
			cls := r.intn(8)
			lo, hi := precRange(cls)
			prec = r.between(lo, hi)
			dtTok += "/" + strconv.Itoa(prec)
			if r.oneIn(30) {
				g.hit("syntax Q precision with zeros")
				dtTok = dtNames[dt] + "/0" + strconv.Itoa(prec)
			}
		} else if r.oneIn(30) {
			g.hit("syntax dtype suffix ignored")
			dtTok += "/" + strconv.Itoa(r.intn(64))
		} else if r.oneIn(40) {
			g.hit("syntax dtype as number")
			dtTok = strconv.Itoa(dt)
		}
	}
	specDT, specPrec := dt, prec
	if dt < dtS32 || dt > dtQU64 {
		valid = false
		specDT = voiDTypes[r.intn(len(voiDTypes))]
		if isQ(specDT) {
			specPrec = r.between(1, 64)
		}
	}
	rel := r.pct(20)
	// A template override.
	target := t
	var mods []string
	if rel {
		mods = append(mods, pick(r, "relupdate", "relupdate", "RELUPDATE", "RelUpdate"))
	}
	switch k := r.intn(100); {
	case k < 3:
		g.hit("voi tpl= current")
		mods = append(mods, "tpl="+strconv.Itoa(t.id))
	case k < 5 && len(g.tpls) > 1:
		g.hit("voi tpl= other")
		target = pick(r, g.tpls...)
		mods = append(mods, "tpl="+strconv.Itoa(target.id))
	case k < 6:
		g.hit("voi tpl= unknown")
		target = nil
		mods = append(mods, "tpl="+pick(r, "99", "-1", strconv.Itoa(len(g.tpls))))
	}
	if len(mods) == 2 && r.oneIn(2) {
		mods[0], mods[1] = mods[1], mods[0]
	}
	// The stats.
	var ns int
	switch k := r.intn(100); {
	case k < 2:
		g.hit("voi without stats")
	case k < 37:
		ns = 1
	case k < 67:
		ns = 2
	case k < 85:
		ns = 3
	case k < 97:
		ns = r.between(4, 6)
	default:
		ns = r.between(7, 16)
	}
	specs := make([]statSpec, ns)
	for i := range specs {
		specs[i] = g.statFor(specDT, specPrec)
	}
	toks := append([]string{"voi", idTok, g.voiName(id), dtTok}, mods...)
	toks = append(toks, ":")
	for _, s := range specs {
		toks = append(toks, s.tok)
	}
	g.emit(toks...)
	line := g.last
	g.expect[line] = "FAIL"

	// Coverage of what was written.
	if valid || dt >= dtS32 && dt <= dtQU64 {
		d := dtNames[dt]
		for _, s := range specs {
			g.hit("voi " + d + " " + s.kind)
		}
		if rel {
			g.hit("voi " + d + " relupdate")
		}
		if isQ(dt) {
			g.hit(fmt.Sprintf("voi %s /%d", d, nfc(ctrlIni(prec))))
		}
	}
	seen := map[int]bool{}
	for _, s := range specs {
		if seen[s.stype] {
			g.hit("voi two stats of one type")
		}
		seen[s.stype] = true
	}

	// What the C does with it.
	if !valid || ns == 0 || target == nil {
		return
	}
	maxst, data := -1, 0
	v := &voiRec{id: id, dt: dt, prec: prec, rel: rel}
	if rel {
		data += stateSize
		v.cols = append(v.cols, colState)
	}
	for _, s := range specs {
		if s.fails {
			return
		}
		maxst = max(maxst, s.stype)
		data += s.dsz
		v.cols = append(v.cols, s.col)
		v.st[s.stype] = s.col
		v.hints = append(v.hints, s.hints...)
	}
	if id < int32(target.nvois) && target.defined[id] != nil {
		return // EOPNOTSUPP
	}
	grow := (maxst+1)*statSize + data
	if int(id) >= target.nvois {
		grow += (int(id) - (target.nvois - 1)) * voiSize
	}
	if target.cursz+grow > maxBlobSz {
		g.hit("voi too big for a blob")
		return // EFBIG
	}
	g.hit("voi added")
	g.expect[line] = "OK"
	target.cursz += grow
	target.nvois = max(target.nvois, int(id)+1)
	target.defined[id] = v
	target.defIDs = append(target.defIDs, id)
	if target == t {
		t.recs[id] = v
		t.recIDs = append(t.recIDs, id)
	}
}

// precRange is the range of requested precisions P that round to the
// control bits cls.
func precRange(cls int) (lo, hi int) {
	switch {
	case cls < 4:
		return 2*cls + 1, 2*cls + 2
	case cls == 4:
		return 9, 16
	case cls == 5:
		return 17, 32
	case cls == 6:
		return 33, 48
	}
	return 49, 64
}

func (g *gen) voiName(id int32) string {
	r := g.r
	switch r.intn(10) {
	case 0:
		return pick(r, voiBaseNames...)
	case 1:
		g.hit("voi long name")
		return strings.Repeat("n", r.between(20, 100))
	}
	return pick(r, voiBaseNames...) + strconv.Itoa(int(id))
}

func (g *gen) useTplCmd() {
	if len(g.tpls) < 2 {
		g.tplCmd()
		return
	}
	t := pick(g.r, g.tpls...)
	g.hit("usetpl")
	g.emit("usetpl", t.name)
	g.cur = t
}

// ---- blobs ----

var blobBaseNames = []string{"b", "c", "snap", "s", "dst", "tmp", "copy", "big", "small", "x"}

// blobName draws a blob name other than avoid: often a live one, never a
// 65th distinct one.
func (g *gen) blobName(avoid string) string {
	r := g.r
	for range 100 {
		var n string
		if len(g.live) > 0 && r.pct(35) {
			n = pick(r, g.live...)
		} else {
			n = pick(r, blobBaseNames...)
			if r.oneIn(2) {
				n += strconv.Itoa(r.intn(30))
			}
		}
		if n == avoid || !g.usedNames[n] && len(g.usedNames) >= 60 {
			continue
		}
		g.usedNames[n] = true
		return n
	}
	for n := range g.usedNames { // some used name other than avoid exists
		if n != avoid {
			return n
		}
	}
	return "b"
}

// store puts a blob under its name, replacing a live one of that name.
func (g *gen) store(b *blobState) {
	if _, ok := g.blobs[b.name]; !ok {
		g.live = append(g.live, b.name)
	}
	g.blobs[b.name] = b
}

// newBlob returns the state of a blob made from t now: it holds the VOIs t holds.
func newBlob(name string, t *tplState, cursz, bufsz int, usable bool) *blobState {
	b := &blobState{name: name, tpl: t, cursz: cursz, bufsz: bufsz, usable: usable, vois: map[int32]*voiRec{}}
	if usable {
		for _, id := range t.defIDs {
			b.vois[id] = t.defined[id]
			b.ids = append(b.ids, id)
		}
	}
	return b
}

// copyBlob returns the state of a copy of src (snapshot, clone, clone_into)
// stored as name.
func copyBlob(name string, src *blobState, cursz, bufsz int, usable bool) *blobState {
	b := &blobState{name: name, tpl: src.tpl, cursz: cursz, bufsz: bufsz, usable: usable, vois: src.vois, ids: src.ids,
		samples: maps.Clone(src.samples)}
	if !usable {
		b.vois, b.ids = map[int32]*voiRec{}, nil
	}
	return b
}

func (g *gen) blobCmd() {
	r := g.r
	if g.cur == nil {
		g.tplCmd()
		return
	}
	t := g.cur
	if len(g.tpls) > 1 && r.oneIn(4) {
		t = pick(r, g.tpls...)
	}
	name := g.blobName("")
	switch {
	case t == g.cur && name == "b" && r.oneIn(2):
		g.hit("blob default name")
		g.emit("blob")
	case t == g.cur && r.oneIn(2):
		g.emit("blob", name)
	default:
		g.hit("blob with template")
		g.emit("blob", name, t.name)
	}
	g.hit("blob")
	g.expect[g.last] = fmt.Sprintf("cursz=%d maxsz=%d", t.cursz, t.cursz)
	g.store(newBlob(name, t, t.cursz, t.cursz, true))
	g.curBlob = name
}

func (g *gen) initCmd() {
	r := g.r
	if len(g.tpls) == 0 {
		g.tplCmd()
		return
	}
	t := g.cur
	if t == nil || r.oneIn(3) {
		t = pick(r, g.tpls...)
	}
	name := g.blobName(g.curBlob)
	var size int
	switch k := r.intn(10); {
	case k < 3:
		g.hit("init exact size")
		size = t.cursz
	case k < 5:
		g.hit("init too small")
		size = max(t.cursz-r.between(1, 40), 0)
	case k < 6:
		g.hit("init under 64 bytes")
		size = r.between(0, 63)
	case k < 7:
		size = maxBlobSz
	default:
		size = t.cursz + r.between(1, 300)
	}
	size = min(size, maxBlobSz)
	ok := size >= t.cursz
	g.emit("init", name, t.name, smallLit(size))
	g.expect[g.last] = "FAIL"
	if ok {
		g.expect[g.last] = "OK"
		g.hit("init")
		g.store(newBlob(name, t, t.cursz, size, true))
		g.curBlob = name
	} else {
		g.hit("init fails")
		g.store(newBlob(name, t, 0, size, false))
	}
}

func (g *gen) usable() []string {
	var out []string
	for _, n := range g.live {
		if g.blobs[n].usable {
			out = append(out, n)
		}
	}
	return out
}

func (g *gen) useCmd() {
	u := g.usable()
	if len(u) == 0 {
		g.blobCmd()
		return
	}
	n := pick(g.r, u...)
	g.hit("use")
	g.emit("use", n)
	g.curBlob = n
}

// current returns the current blob, making one if there is none.
func (g *gen) current() *blobState {
	for g.curBlob == "" {
		if u := g.usable(); len(u) > 0 && g.r.oneIn(2) {
			g.useCmd()
		} else {
			g.blobCmd()
		}
	}
	return g.blobs[g.curBlob]
}

func (g *gen) destroyCmd() {
	if len(g.live) == 0 {
		g.blobCmd()
		return
	}
	n := pick(g.r, g.live...)
	g.hit("destroy")
	if !g.blobs[n].usable {
		g.hit("destroy failed buffer")
	}
	g.emit("destroy", n)
	delete(g.blobs, n)
	g.live = slices.DeleteFunc(g.live, func(x string) bool { return x == n })
	if g.curBlob == n {
		g.curBlob = ""
	}
}

func (g *gen) copyCmd() {
	r := g.r
	src := g.current()
	name := g.blobName(src.name)
	switch k := r.intn(10); {
	case k < 4:
		toks := []string{"snapshot", name}
		reset := r.pct(45)
		if reset {
			toks = append(toks, "reset")
			g.hit("snapshot reset")
			g.cellsOf("reset", src)
			defer clear(src.samples)
		} else {
			g.hit("snapshot")
		}
		g.emit(toks...)
		g.store(copyBlob(name, src, src.cursz, src.cursz, true))
	case k < 6:
		g.hit("clone")
		g.emit("clone", name)
		g.store(copyBlob(name, src, src.cursz, src.cursz, true))
	default:
		var size int
		switch k := r.intn(10); {
		case k < 3:
			g.hit("clone_into exact size")
			size = src.cursz
		case k < 5:
			g.hit("clone_into short buffer")
			size = r.between(8, max(src.cursz-1, 8))
		case k < 6:
			g.hit("clone_into under 8 bytes")
			size = r.between(0, 7)
		case k < 7:
			size = maxBlobSz
		default:
			size = src.cursz + r.between(1, 200)
		}
		size = min(size, maxBlobSz)
		ok := size >= 8 && size >= src.cursz
		toks := []string{"clone_into", name, smallLit(size)}
		reset := r.pct(35)
		if reset {
			toks = append(toks, "reset")
		}
		g.emit(toks...)
		g.expect[g.last] = "FAIL"
		if ok {
			g.expect[g.last] = "OK"
			g.hit("clone_into")
			if reset {
				g.hit("clone_into reset")
				g.cellsOf("reset", src)
				defer clear(src.samples)
			}
			g.store(copyBlob(name, src, src.cursz, size, true))
		} else {
			g.hit("clone_into fails")
			g.store(copyBlob(name, src, src.cursz, size, false))
		}
	}
}

// cellsOf counts a command on every statistic of a blob.
func (g *gen) cellsOf(cmd string, b *blobState) {
	for _, id := range b.ids {
		v := b.vois[id]
		for _, c := range v.cols {
			g.hit(cmd + " " + dtNames[v.dt] + " " + colNames[c])
		}
	}
}

// ---- updates ----

// asDType draws a DTYPE token for `update ... as`, with its dtype and
// precision.
func (g *gen) asDType(v *voiRec) (tok string, dt, prec int) {
	r := g.r
	switch k := r.intn(10); {
	case k < 5 && v != nil:
		g.hit("update as the VOI's dtype")
		dt, prec = v.dt, v.prec
	case k < 9:
		g.hit("update as a numeric dtype")
		dt = voiDTypes[r.intn(len(voiDTypes))]
		if isQ(dt) {
			prec = r.between(1, 64)
		}
	default:
		g.hit("update as an invalid dtype")
		switch r.intn(3) {
		case 0:
			return pick(r, "0", "19", "255"), -1, 0
		default:
			dt = r.between(dtCR32, dtTD64)
			return g.caseVariant(dtNames[dt]), dt, 0
		}
	}
	tok = g.caseVariant(dtNames[dt])
	if isQ(dt) {
		tok += "/" + strconv.Itoa(prec)
	}
	return tok, dt, prec
}

// reaches reports whether an update of VOI id with dtype dt reaches the
// statistics of blob b, and returns the VOI.
func reaches(b *blobState, id int32, dt int, rel bool) (*voiRec, bool) {
	v := b.vois[id]
	if v == nil || v.dt != dt || rel && !v.rel {
		return nil, false
	}
	return v, true
}

func (g *gen) idTok(id int32) string {
	if g.r.oneIn(40) {
		g.hit("syntax id with high bits")
		return strconv.FormatUint(uint64(g.r.between(1, 7))<<32|uint64(uint32(id)), 10)
	}
	return strconv.Itoa(int(id))
}

func (g *gen) updateCmd() {
	r := g.r
	b := g.current()
	var v *voiRec
	if len(b.tpl.recIDs) > 0 && r.pct(85) {
		v = b.tpl.recs[pick(r, b.tpl.recIDs...)]
	}
	rel := r.pct(20)
	if v != nil && v.rel && r.pct(50) {
		rel = true
	}
	mode := "abs"
	if rel {
		mode = "rel"
	}
	var id int32
	var tail []string
	dt, prec := 0, 0
	if v != nil {
		id, dt, prec = v.id, v.dt, v.prec
		if r.oneIn(7) {
			var tok string
			tok, dt, prec = g.asDType(v)
			tail = []string{"as", tok}
		}
	} else {
		switch k := r.intn(10); {
		case k < 5 && len(b.ids) > 0:
			id = pick(r, b.ids...)
			v = b.vois[id]
		case k < 7:
			id = int32(r.between(0, 50))
		case k < 9:
			g.hit("update negative id")
			id = pick[int32](r, -1, -2, -2147483648)
		default:
			id = int32(r.between(100, 100000))
		}
		var tok string
		tok, dt, prec = g.asDType(v)
		tail = []string{"as", tok}
	}
	val := g.valueLit(dt, prec, v)
	g.emit(append([]string{"update", mode, g.idTok(id), val}, tail...)...)
	g.hit("update " + mode)
	if v, ok := reaches(b, id, dt, rel); ok {
		for _, c := range v.cols {
			g.hit("update " + mode + " " + dtNames[v.dt] + " " + colNames[c])
		}
	}
}

func (g *gen) updatesCmd() {
	r := g.r
	b := g.current()
	if len(b.tpl.recIDs) == 0 {
		g.updateCmd()
		return
	}
	v := b.tpl.recs[pick(r, b.tpl.recIDs...)]
	rel := r.pct(15) || v.rel && r.pct(50)
	mode := "abs"
	if rel {
		mode = "rel"
	}
	var n uint64
	switch k := r.intn(100); {
	case k < 2:
		n = 0
	case k < 32:
		n = uint64(r.between(1, 20))
	case k < 77:
		n = uint64(r.between(21, 500))
	case k < 95:
		n = uint64(r.between(501, 5000))
	case k < 99:
		n = uint64(r.between(5001, 40000))
	default:
		n = uint64(r.between(40001, 100000))
	}
	if v.st[stTDgst] != 0 && r.oneIn(25) {
		n = uint64(r.between(40001, 100000)) // digests past 2^16 samples
	}
	if n > 40000 {
		g.hit("updates over 40000")
	}
	nTok := strconv.FormatUint(n, 10)
	if r.oneIn(10) {
		nTok = "0x" + strconv.FormatUint(n, 16)
	}
	var dist, dname string
	switch k := r.intn(20); {
	case k < 7:
		dist, dname = "uniform", "uniform"
	case k < 12:
		dist, dname = "logish", "logish"
	case k < 16:
		dist, dname = "signed", "signed"
	default:
		dname = "mod"
		dist = "mod:" + pick(r, strconv.Itoa(r.between(1, 100)), "7", "0x100", "1000000", "UINT64_MAX", "-1", "1", g.intLit(r.u64()|1))
	}
	g.emit("updates", mode, g.idTok(v.id), nTok, dist)
	g.hit("updates " + mode + " " + dname)
	if v, ok := reaches(b, v.id, v.dt, rel); ok && n > 0 {
		for _, c := range v.cols {
			g.hit("updates " + mode + " " + dtNames[v.dt] + " " + colNames[c])
		}
		if v.st[stTDgst] != 0 {
			if b.samples == nil {
				b.samples = map[int32]int{}
			}
			before := b.samples[v.id]
			b.samples[v.id] += int(n)
			if before <= 1<<16 && b.samples[v.id] > 1<<16 {
				g.hit("t-digest past 65536 samples")
			}
		}
	}
}

func (g *gen) seedCmd() {
	g.hit("seed")
	g.emit("seed", g.intLit(g.r.logU(64)))
}

func (g *gen) streamCmd() {
	g.hit("stream")
	g.emit("stream", g.intLit(g.r.logU(64)|1<<uint(g.r.intn(64))))
}

func (g *gen) clockCmd() {
	r := g.r
	sec := r.bitsn(r.between(0, 31))
	nsec := uint64(r.between(0, 999999999))
	if r.oneIn(4) {
		nsec = pick[uint64](r, 0, 1, 999999999, 500000000)
	}
	secTok := strconv.FormatUint(sec, 10)
	if r.oneIn(8) {
		secTok = "0x" + strconv.FormatUint(sec, 16)
	}
	g.hit("clock")
	g.emit("clock", secTok, strconv.FormatUint(nsec, 10))
}

// ---- reading ----

var stypeToks = []string{"VOISTATE", "SUM", "MAX", "MIN", "HIST", "TDGST"}

func (g *gen) fetchCmd() {
	r := g.r
	b := g.current()
	var id int32
	var v *voiRec
	switch k := r.intn(10); {
	case k < 8 && len(b.ids) > 0:
		id = pick(r, b.ids...)
		v = b.vois[id]
	case k < 9 && len(b.tpl.recIDs) > 0:
		id = pick(r, b.tpl.recIDs...)
		v = b.vois[id]
	default:
		id = pick[int32](r, -1, 0, 1, 5, 99, 2147483647)
	}
	st := -1
	var stTok string
	if v != nil && r.pct(75) {
		var have []int
		for s := stVoiState; s <= stTDgst; s++ {
			if v.st[s] != 0 || s == stVoiState && v.rel {
				have = append(have, s)
			}
		}
		if len(have) > 0 {
			st = pick(r, have...)
			stTok = g.caseVariant(stypeToks[st])
			if r.oneIn(10) {
				stTok = strconv.Itoa(st)
			}
		}
	}
	if stTok == "" {
		g.hit("fetch odd stat type")
		stTok = pick(r, "VOISTATE", "SUM", "max", "Min", "HIST", "tdgst", "-1", "0", "3", "5", "6", "127", "128", "256", "258", "-129", "2x")
	}
	toks := []string{"fetch", g.idTok(id), stTok}
	cmd := "fetch"
	if r.pct(30) {
		cmd = "fetch as"
		toks = append(toks, "as", pick(r, "s32", "u32", "s64", "u64", "slong", "ulong"))
	}
	g.emit(toks...)
	g.hit(cmd)
	if v != nil && st >= 0 {
		c := v.st[st]
		if st == stVoiState {
			c = colState
		}
		g.hit(cmd + " " + dtNames[v.dt] + " " + colNames[c])
	}
}

func (g *gen) visitCmd() {
	r := g.r
	b := g.current()
	toks := []string{"visit"}
	if r.pct(30) {
		g.hit("visit stop")
		toks = append(toks, pick(r, "0", "1", "2", strconv.Itoa(r.between(3, 30)), "-1", "3x"))
	} else {
		g.cellsOf("visit", b)
	}
	g.hit("visit")
	g.emit(toks...)
}

var renderKinds = []string{"freeform", "freeform_objdump", "freeform_meta", "freeform_objdump_meta",
	"json", "json_objdump", "json_meta", "json_objdump_meta"}

func (g *gen) dumpCmd() {
	r := g.r
	switch k := r.intn(20); {
	case k < 3:
		// Bytes of any live blob, also failed buffers.
		kind := pick(r, "hex", "layout")
		if len(g.live) > 0 && r.pct(40) {
			n := pick(r, g.live...)
			if !g.blobs[n].usable {
				g.hit("dump " + kind + " of a failed buffer")
			}
			g.hit("dump " + kind)
			g.emit("dump", kind, n)
			return
		}
		g.current()
		g.hit("dump " + kind)
		g.emit("dump", kind)
	case k < 5:
		if len(g.tpls) == 0 {
			g.tplCmd()
			return
		}
		kind := pick(r, "tplhex", "tpllayout")
		g.hit("dump " + kind)
		if g.cur == nil || r.pct(40) {
			g.emit("dump", kind, pick(r, g.tpls...).name)
			return
		}
		g.emit("dump", kind)
	default:
		kind := pick(r, renderKinds...)
		b := g.current()
		toks := []string{"dump", kind}
		if u := g.usable(); len(u) > 1 && r.pct(30) {
			b = g.blobs[pick(r, u...)]
			toks = append(toks, b.name)
		}
		g.hit("dump " + kind)
		g.cellsOf("render", b)
		g.emit(toks...)
	}
}

func (g *gen) tplInfoCmd() {
	r := g.r
	if len(g.tpls) == 0 {
		g.tplCmd()
		return
	}
	t := pick(r, g.tpls...)
	switch r.intn(5) {
	case 0, 1:
		cmd := pick(r, "tplhash", "tplspec")
		g.hit(cmd)
		if g.cur != nil && r.pct(50) {
			g.emit(cmd)
		} else {
			g.emit(cmd, t.name)
		}
	case 2, 3:
		name := t.name
		switch r.intn(6) {
		case 0:
			g.hit("tplid unknown name")
			name = "NOPE" + strconv.Itoa(r.intn(10))
		case 1:
			g.hit("tplid by hash")
			name = "-"
		}
		toks := []string{"tplid", name}
		switch r.intn(4) {
		case 0:
			toks = append(toks, "0")
		case 1:
			g.hit("tplid with a hash")
			toks = append(toks, g.intLit(r.u64()>>r.intn(64)))
		}
		if name == "-" && len(toks) == 2 {
			toks = append(toks, "0")
		}
		g.hit("tplid")
		g.emit(toks...)
	default:
		id := strconv.Itoa(t.id)
		switch r.intn(5) {
		case 0:
			g.hit("id2name unknown id")
			id = pick(r, strconv.Itoa(len(g.tpls)), "99", "-1", "4294967295")
		}
		l := pick(r, "0", "1", strconv.Itoa(len(t.name)), strconv.Itoa(len(t.name)+1), "64", "65", "256", "1000", "-1")
		g.hit("id2name")
		g.emit("id2name", id, l)
	}
}

func (g *gen) diceCmd() {
	r := g.r
	seed := "-"
	if r.pct(60) {
		n := r.between(1, 16)
		if r.oneIn(20) {
			n = r.between(17, 256)
		}
		var sb strings.Builder
		if r.oneIn(3) {
			sb.WriteString("0x")
		}
		upper := r.oneIn(4)
		for range n {
			s := fmt.Sprintf("%02x", r.intn(256))
			if upper {
				s = strings.ToUpper(s)
			}
			sb.WriteString(s)
		}
		seed = sb.String()
		g.hit("dice seeded")
	} else {
		g.hit("dice unseeded")
	}
	n := r.between(1, 6)
	if r.oneIn(15) {
		n = r.between(7, 64)
	}
	left := 100
	items := make([]string, n)
	for i := range items {
		p := 0
		if left > 0 {
			p = r.between(0, left)
			if r.oneIn(3) {
				p = r.between(0, min(left, 10))
			}
		}
		left -= p
		items[i] = strconv.Itoa(p)
		if r.oneIn(4) {
			g.hit("dice slot=pct")
			items[i] = strconv.Itoa(int(int32(r.u64()>>r.intn(64)))) + "=" + items[i]
		}
	}
	g.emit("dice", seed, strings.Join(items, ","))
}

func (g *gen) miscCmd() {
	r := g.r
	switch r.intn(3) {
	case 0:
		g.hit("sizes")
		g.emit("sizes")
	default:
		g.hit("echo")
		toks := []string{"echo"}
		for range r.intn(5) {
			toks = append(toks, pick(r, "hello", "-", "x=1", "(a,b)", "::", "42"))
		}
		g.emit(toks...)
	}
}

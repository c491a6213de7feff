// Package scenario runs conformance scenarios: the line-oriented language of
// testdata/conformance/FORMAT.md that drives the engine and prints exactly
// what the C reference's driver prints for the same commands.
package scenario

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/internal/golden"
	"github.com/statsblob/statsblob/internal/stream"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// MaxLine is the longest scenario line, in bytes.
const MaxLine = 65535

// runTpl is a template as the runner knows it.
type runTpl struct {
	name string
	t    *tpl.Template
	vois map[int32]voiRec
}

// voiRec is the runner's record of a VOI it added successfully.
type voiRec struct {
	dt   voi.DType
	prec int
	rel  bool
}

// runBlob is a named blob: its buffer, the bytes that count (bufsz) and the
// runner template it was made from.
type runBlob struct {
	buf   []byte
	bufsz int
	tpl   *runTpl
}

// Runner holds the state of one scenario run.
type Runner struct {
	w    *bufio.Writer
	reg  *tpl.Registry
	tpls []*runTpl
	cur  *runTpl

	blobs   map[string]*runBlob
	curBlob string

	rand   *bsdrand.Source
	env    *blob.Env
	sec    int64
	nsec   int64
	stream stream.Stream // the value stream (FORMAT.md 9)
}

// New returns a runner in the initial state of a run: no templates or
// blobs, the PRNG seeded with 1, the value stream at its default seed and
// the clock at 1000 s.
func New(w io.Writer) *Runner {
	r := &Runner{
		w:      bufio.NewWriter(w),
		reg:    tpl.NewRegistry(),
		blobs:  map[string]*runBlob{},
		rand:   bsdrand.New(1),
		sec:    1000,
		stream: stream.Seed,
	}
	r.env = &blob.Env{Rand: r.rand, Clock: func() int64 { return blob.SBinTime(r.sec, r.nsec) }}
	return r
}

// Run executes a scenario read from in and writes its output to w.
func Run(in io.Reader, w io.Writer) error {
	r := New(w)
	err := r.Run(in)
	if ferr := r.w.Flush(); err == nil {
		err = ferr
	}
	return err
}

// Run executes every line of in.
func (r *Runner) Run(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 4096), MaxLine+1)
	n := 0
	for sc.Scan() {
		n++
		if err := r.Line(sc.Text()); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
	}
	return sc.Err()
}

// Tokens splits a scenario line into its tokens (comments removed).
func Tokens(line string) []string {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	return strings.FieldsFunc(line, func(c rune) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' })
}

// Line executes one scenario line.
func (r *Runner) Line(line string) error {
	toks := Tokens(line)
	if len(toks) == 0 {
		return nil
	}
	r.printf(">")
	for _, t := range toks {
		r.printf(" %s", t)
	}
	r.printf("\n")
	cmd, ok := commands[toks[0]]
	if !ok {
		return fmt.Errorf("%w: unknown command %q", errSyntax, toks[0])
	}
	return cmd(r, toks[1:])
}

func (r *Runner) printf(format string, args ...any) { fmt.Fprintf(r.w, format, args...) }

var commands map[string]func(*Runner, []string) error

func init() {
	commands = map[string]func(*Runner, []string) error{
		"tpl":        (*Runner).cmdTpl,
		"usetpl":     (*Runner).cmdUseTpl,
		"voi":        (*Runner).cmdVOI,
		"blob":       (*Runner).cmdBlob,
		"init":       (*Runner).cmdInit,
		"use":        (*Runner).cmdUse,
		"update":     (*Runner).cmdUpdate,
		"updates":    (*Runner).cmdUpdates,
		"stream":     (*Runner).cmdStream,
		"seed":       (*Runner).cmdSeed,
		"clock":      (*Runner).cmdClock,
		"fetch":      (*Runner).cmdFetch,
		"snapshot":   (*Runner).cmdSnapshot,
		"clone":      (*Runner).cmdClone,
		"clone_into": (*Runner).cmdCloneInto,
		"destroy":    (*Runner).cmdDestroy,
		"visit":      (*Runner).cmdVisit,
		"tplhash":    (*Runner).cmdTplHash,
		"tplspec":    (*Runner).cmdTplSpec,
		"tplid":      (*Runner).cmdTplID,
		"id2name":    (*Runner).cmdID2Name,
		"dice":       (*Runner).cmdDice,
		"dump":       (*Runner).cmdDump,
		"sizes":      (*Runner).cmdSizes,
		"echo":       func(*Runner, []string) error { return nil },
	}
}

func need(args []string, n int) error {
	if len(args) < n {
		return fmt.Errorf("%w: need %d arguments, have %d", errSyntax, n, len(args))
	}
	return nil
}

func (r *Runner) findTpl(name string) (*runTpl, error) {
	for _, t := range r.tpls {
		if t.name == name {
			return t, nil
		}
	}
	return nil, fmt.Errorf("%w: unknown template %q", errSyntax, name)
}

// tplArg returns the named runner template, or the current one.
func (r *Runner) tplArg(args []string, i int) (*runTpl, error) {
	if len(args) > i {
		return r.findTpl(args[i])
	}
	if r.cur == nil {
		return nil, fmt.Errorf("%w: no current template", errSyntax)
	}
	return r.cur, nil
}

func (r *Runner) findBlob(name string) (*runBlob, error) {
	b, ok := r.blobs[name]
	if !ok {
		return nil, fmt.Errorf("%w: unknown blob %q", errSyntax, name)
	}
	return b, nil
}

// blobArg returns the named blob, or the current one, with its name.
func (r *Runner) blobArg(args []string, i int) (string, *runBlob, error) {
	name := r.curBlob
	if len(args) > i {
		name = args[i]
	}
	if name == "" {
		return "", nil, fmt.Errorf("%w: no current blob", errSyntax)
	}
	b, err := r.findBlob(name)
	return name, b, err
}

// engine returns the engine's view of a runner blob.
func (r *Runner) engine(rb *runBlob) (*blob.Blob, error) {
	return blob.Wrap(rb.buf[:rb.bufsz], r.env)
}

func (r *Runner) cmdTpl(args []string) error {
	if err := need(args, 1); err != nil {
		return err
	}
	name := args[0]
	t, err := r.reg.New(name)
	if err != nil {
		n := voi.Errno(err)
		r.printf("tpl_alloc(%q) = %d %s\n", name, -n, rc(-n))
		return nil
	}
	rt := &runTpl{name: name, t: t, vois: map[int32]voiRec{}}
	r.tpls = append(r.tpls, rt)
	r.cur = rt
	r.printf("tpl_alloc(\"%s\") = %d\n", name, t.ID())
	return nil
}

func (r *Runner) cmdUseTpl(args []string) error {
	if err := need(args, 1); err != nil {
		return err
	}
	t, err := r.findTpl(args[0])
	if err != nil {
		return err
	}
	r.cur = t
	return nil
}

func (r *Runner) cmdVOI(args []string) error {
	colon := -1
	for i, a := range args {
		if a == ":" {
			colon = i
			break
		}
	}
	if colon < 3 {
		return fmt.Errorf("%w: voi needs ID NAME DTYPE before ':'", errSyntax)
	}
	idv, err := parseInt(args[0])
	if err != nil {
		return err
	}
	id := int32(idv)
	name := args[1]
	dt, err := golden.ParseDType(args[2])
	if err != nil {
		return err
	}
	rel := false
	tplID := -1
	if r.cur != nil {
		tplID = r.cur.t.ID()
	}
	override := false
	for _, a := range args[3:colon] {
		switch {
		case strings.EqualFold(a, "relupdate"):
			rel = true
		case strings.HasPrefix(a, "tpl="):
			v, err := parseInt(a[4:])
			if err != nil {
				return err
			}
			tplID, override = int(int32(v)), true
		default:
			return fmt.Errorf("%w: unexpected %q in voi definition", errSyntax, a)
		}
	}
	specs := args[colon+1:]
	stats := make([]tpl.StatSpec, 0, len(specs))
	for _, s := range specs {
		st, err := parseStatSpec(s)
		if err != nil {
			return err
		}
		stats = append(stats, st)
	}
	d := tpl.VOIDef{ID: id, Name: name, DType: dt.Engine(), Prec: dt.Prec, Stats: stats}
	if rel {
		d.Flags = voi.FlagRelUpdate
	}
	var res error
	if t, err := r.reg.ByID(tplID); err != nil {
		res = voi.ErrInvalid
	} else {
		res = t.AddVOI(d)
	}
	relStr := ""
	if rel {
		relStr = ", RELUPDATE"
	}
	r.printf("tpl_add_voistats(tpl=%d, voi=%d, \"%s\", %s%s, nvss=%d) = %s\n", tplID, id, name, dt.Name(), relStr, len(specs), rcErr(res))
	if res == nil && r.cur != nil && (!override || tplID == r.cur.t.ID()) {
		r.cur.vois[id] = voiRec{dt: dt.Engine(), prec: dt.Prec, rel: rel}
	}
	return nil
}

func (r *Runner) storeBlob(name string, b *runBlob) { r.blobs[name] = b }

func (r *Runner) cmdBlob(args []string) error {
	name := "b"
	if len(args) > 0 {
		name = args[0]
	}
	t, err := r.tplArg(args, 1)
	if err != nil {
		return err
	}
	bl := blob.New(t.t, r.env)
	buf := bl.Buffer()
	r.storeBlob(name, &runBlob{buf: buf, bufsz: bl.MaxSz(), tpl: t})
	r.curBlob = name
	r.printf("blob_alloc -> %s: cursz=%d maxsz=%d bufsz=%d\n", name, bl.CurSz(), bl.MaxSz(), bl.MaxSz())
	return nil
}

// newBuffer is the runner's zero-filled buffer of max(maxsz, 64) bytes
// whose header maxsz field is uint16(maxsz).
func newBuffer(maxsz uint64) []byte {
	n := max(maxsz, 64)
	buf := make([]byte, n)
	buf[4], buf[5] = byte(maxsz), byte(maxsz>>8)
	return buf
}

func (r *Runner) cmdInit(args []string) error {
	if err := need(args, 3); err != nil {
		return err
	}
	name := args[0]
	t, err := r.findTpl(args[1])
	if err != nil {
		return err
	}
	maxsz, err := parseInt(args[2])
	if err != nil {
		return err
	}
	if maxsz > blobLimit {
		return fmt.Errorf("%w: init size %d", errSyntax, maxsz)
	}
	buf := newBuffer(maxsz)
	_, ierr := blob.Init(buf, t.t, r.env)
	r.storeBlob(name, &runBlob{buf: buf, bufsz: int(maxsz), tpl: t})
	if ierr == nil {
		r.curBlob = name
	}
	r.printf("blob_init(%s, tpl=%d, maxsz=%d) = %s\n", name, t.t.ID(), maxsz, rcErr(ierr))
	return nil
}

// blobLimit bounds the buffers a scenario may ask for.
const blobLimit = 1 << 20

func (r *Runner) cmdUse(args []string) error {
	if err := need(args, 1); err != nil {
		return err
	}
	if _, err := r.findBlob(args[0]); err != nil {
		return err
	}
	r.curBlob = args[0]
	return nil
}

func (r *Runner) cmdDestroy(args []string) error {
	if err := need(args, 1); err != nil {
		return err
	}
	if _, err := r.findBlob(args[0]); err != nil {
		return err
	}
	delete(r.blobs, args[0])
	if r.curBlob == args[0] {
		r.curBlob = ""
	}
	r.printf("destroyed %s\n", args[0])
	return nil
}

func (r *Runner) cmdStream(args []string) error {
	if err := need(args, 1); err != nil {
		return err
	}
	v, err := parseInt(args[0])
	if err != nil {
		return err
	}
	if v == 0 {
		return fmt.Errorf("%w: stream 0", errSyntax)
	}
	r.stream = stream.Stream(v)
	return nil
}

func (r *Runner) cmdSeed(args []string) error {
	if err := need(args, 1); err != nil {
		return err
	}
	v, err := parseInt(args[0])
	if err != nil {
		return err
	}
	r.rand.Seed(uint32(v))
	r.rand.ResetCalls()
	r.printf("random() reseeded with %s\n", args[0])
	return nil
}

func (r *Runner) cmdClock(args []string) error {
	if err := need(args, 2); err != nil {
		return err
	}
	sec, err := parseInt(args[0])
	if err != nil {
		return err
	}
	nsec, err := parseInt(args[1])
	if err != nil {
		return err
	}
	r.sec, r.nsec = int64(sec), int64(nsec)
	r.printf("clock = %s.%09d s\n", args[0], int64(nsec))
	return nil
}

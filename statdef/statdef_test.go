package statdef_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/internal/alloctest"
	"github.com/statsblob/statsblob/statdef"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

func connTpl(t testing.TB) *tpl.Template {
	tp, err := tpl.NewRegistry().New("CONN")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "bytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 2, Name: "rtt", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Max(), tpl.Sum()}}))
	return tp
}

func setup(t testing.TB) (statdef.Def, *blob.Blob) {
	tp := connTpl(t)
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	c := &blob.Control{Clock: func() time.Time { now = now.Add(time.Second); return now }}
	bl := blob.New(tp, nil)
	bl.SetControl(c)
	return statdef.Def{Template: tp, Control: c, Reset: bl}, bl
}

func read(t testing.TB, d statdef.Def) string {
	var b strings.Builder
	require.NoError(t, d.Write(&b))
	return b.String()
}

func TestApplyAndReadBack(t *testing.T) {
	d, bl := setup(t)
	require.Equal(t, "on=1\nname=bytes on=1\nname=rtt on=1\n", read(t, d))
	require.NoError(t, bl.UpdateU32(2, 40))
	require.NoError(t, bl.UpdateU64(0, 1000))

	require.NoError(t, d.Apply("name=rtt on=0\n\n  name=bytes data=reset  \n"))
	require.NoError(t, bl.UpdateU32(2, 90)) // off: not counted
	require.Equal(t, "on=1\nname=bytes on=1\nname=rtt on=0 stopped=2026-11-27T12:00:01Z\n", read(t, d))
	s, err := bl.Fetch(2, voi.Max)
	require.NoError(t, err)
	v, _ := s.Value()
	require.Equal(t, 40.0, v)
	s, err = bl.Fetch(0, voi.Sum)
	require.NoError(t, err)
	v, _ = s.Value()
	require.Equal(t, 0.0, v)

	require.NoError(t, d.Apply("on=0\nname=rtt on=1"))
	require.Equal(t, "on=0 stopped=2026-11-27T12:00:02Z\nname=bytes on=1\nname=rtt on=1 started=2026-11-27T12:00:03Z stopped=2026-11-27T12:00:01Z\n", read(t, d))
	require.NoError(t, bl.UpdateU32(2, 90)) // all off
	require.NoError(t, d.Apply("on=1 data=reset"))
	s, _ = bl.Fetch(2, voi.Max)
	require.False(t, s.Valid) // reset

	// What Write prints, Apply takes back and changes nothing.
	before := read(t, d)
	require.NoError(t, d.Apply(before))
	require.Equal(t, before, read(t, d))
}

func TestApplyRejectsAndChangesNothing(t *testing.T) {
	for _, text := range []string{
		"name=nope on=0",
		"name=rtt on=2",
		"name=rtt onn=0",
		"name=rtt off",
		"on=1 name=rtt",
		"name=rtt on=0\ndata=clear",
		"name=rtt on=0\n" + strings.Repeat("x", statdef.MaxLine+1),
	} {
		d, bl := setup(t)
		require.NoError(t, bl.UpdateU32(2, 40))
		want, wantBytes := read(t, d), append([]byte(nil), bl.Bytes()...)
		require.ErrorIs(t, d.Apply(text), voi.ErrInvalid, text)
		require.Equal(t, want, read(t, d), text)
		require.Equal(t, wantBytes, bl.Bytes(), text)
	}
	d, _ := setup(t)
	d.Reset = nil
	require.ErrorIs(t, d.Apply("name=rtt data=reset"), voi.ErrInvalid)
	require.ErrorIs(t, statdef.Def{}.Apply("on=1"), voi.ErrInvalid)
	require.ErrorIs(t, statdef.Def{}.Write(&strings.Builder{}), voi.ErrInvalid)
	var nilCtl *blob.Control
	require.ErrorIs(t, statdef.Def{Template: connTpl(t), Control: nilCtl}.Apply("on=1"), voi.ErrInvalid)
}

// nameSwitch keeps settings by VOI name, as a collector does for the
// versions of a template: a Switch that is not a blob.Control.
type nameSwitch struct {
	tp  *tpl.Template
	off map[string]bool
	all bool
	log []string
}

func (n *nameSwitch) name(id int32) string { s, _ := n.tp.VOIName(id); return s }
func (n *nameSwitch) Set(id int32, on bool) error {
	n.off[n.name(id)] = !on
	n.log = append(n.log, fmt.Sprintf("set %s %v", n.name(id), on))
	return nil
}
func (n *nameSwitch) SetAll(on bool) { n.all = !on; n.log = append(n.log, fmt.Sprintf("all %v", on)) }
func (n *nameSwitch) State(id int32) blob.VOIState {
	return blob.VOIState{On: !n.off[n.name(id)]}
}
func (n *nameSwitch) AllState() blob.VOIState { return blob.VOIState{On: !n.all} }

// TestApplyOtherSwitch: Def drives any Switch, in the order of the lines.
func TestApplyOtherSwitch(t *testing.T) {
	tp := connTpl(t)
	sw := &nameSwitch{tp: tp, off: map[string]bool{}}
	d := statdef.Def{Template: tp, Control: sw}
	require.NoError(t, d.Apply("name=rtt on=0\non=0\nname=bytes on=1"))
	require.Equal(t, []string{"set rtt false", "all false", "set bytes true"}, sw.log)
	require.Equal(t, "on=0\nname=bytes on=1\nname=rtt on=0\n", read(t, d))
}

// FuzzApply: any text either fails and changes nothing, or succeeds, and
// then the definition read back applies again without changing it.
func FuzzApply(f *testing.F) {
	for _, s := range []string{"on=0", "name=rtt on=0\nname=bytes data=reset", "name=rtt", "=", "name= on=1", "data=reset on=1 started=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		d, bl := setup(t)
		require.NoError(t, bl.UpdateU32(2, 40))
		before, beforeBytes := read(t, d), append([]byte(nil), bl.Bytes()...)
		if err := d.Apply(text); err != nil {
			require.ErrorIs(t, err, voi.ErrInvalid)
			require.Equal(t, before, read(t, d))
			require.Equal(t, beforeBytes, bl.Bytes())
			return
		}
		after := read(t, d)
		require.NoError(t, d.Apply(after))
		require.Equal(t, after, read(t, d))
	})
}

// idSwitch keeps on/off settings by VOI id, without times.
type idSwitch struct {
	off    map[int32]bool
	allOff bool
}

func (s *idSwitch) Set(id int32, on bool) error  { s.off[id] = !on; return nil }
func (s *idSwitch) SetAll(on bool)               { s.allOff = !on }
func (s *idSwitch) State(id int32) blob.VOIState { return blob.VOIState{On: !s.off[id]} }
func (s *idSwitch) AllState() blob.VOIState      { return blob.VOIState{On: !s.allOff} }

// namesTpl returns a template of SUM VOIs with the given names, ids 0, 1, ...
func namesTpl(t testing.TB, names ...string) (*tpl.Template, error) {
	tp, err := tpl.NewRegistry().New("NAMES")
	require.NoError(t, err)
	for i, n := range names {
		if err := tp.AddVOI(tpl.VOIDef{ID: int32(i), Name: n, DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}); err != nil {
			return nil, err
		}
	}
	return tp, nil
}

// A VOI name with a space, a tab, a leading quote or bytes that are not
// printable is written Go-quoted, and read back: the definition applies
// again (it printed name=my voi on=1, which Apply refused with "no VOI
// named \"my\""). Other names, = and quotes inside them too, are written as
// they are, as before.
func TestQuotedNames(t *testing.T) {
	tp, err := namesTpl(t, "my voi", `"q"`, "tab\there", "a=b", `x"y`, "bad\xffbyte", "rtt")
	require.NoError(t, err)
	sw := &idSwitch{off: map[int32]bool{}}
	d := statdef.Def{Template: tp, Control: sw}
	require.NoError(t, d.Apply("name=\"my voi\" on=0\nname=a=b on=0\nname=\"bad\\xffbyte\" on=0\nname=x\"y on=0"))
	want := "on=1\n" +
		"name=\"my voi\" on=0\n" +
		"name=\"\\\"q\\\"\" on=1\n" +
		"name=\"tab\\there\" on=1\n" +
		"name=a=b on=0\n" +
		"name=x\"y on=0\n" +
		"name=\"bad\\xffbyte\" on=0\n" +
		"name=rtt on=1\n"
	text := read(t, d)
	require.Equal(t, want, text)

	// Read back into fresh settings: the same settings.
	back := statdef.Def{Template: tp, Control: &idSwitch{off: map[int32]bool{}}}
	require.NoError(t, back.Apply(text))
	require.Equal(t, want, read(t, back))

	for _, bad := range []string{
		`name="my voi on=0`,   // unterminated
		`name="my voi"x on=0`, // something after the quote
		`name="my\q" on=0`,    // not a Go escape
		`name="my on=0"`,      // the name "my on=0"
	} {
		require.ErrorIs(t, back.Apply(bad), voi.ErrInvalid, bad)
	}
	require.Equal(t, want, read(t, back))
}

// A VOI name long enough to take its line past MaxLine reads back: Write
// printed such a line and Apply refused it ("over 4096"), so the
// definition a server served could not be applied again. The limit does
// not count a VOI name of the template; every other line is held to it.
func TestLongNamesReadBack(t *testing.T) {
	long := strings.Repeat("n", statdef.MaxLine)
	bin := strings.Repeat("\xff", statdef.MaxLine/2) // Write quotes it, 4 bytes a byte
	tp, err := namesTpl(t, long, bin, "rtt")
	require.NoError(t, err)
	sw := &idSwitch{off: map[int32]bool{0: true, 1: true}}
	text := read(t, statdef.Def{Template: tp, Control: sw})
	require.Equal(t, "on=1\nname="+long+" on=0\nname="+strconv.Quote(bin)+" on=0\nname=rtt on=1\n", text)

	back := &idSwitch{off: map[int32]bool{}}
	require.NoError(t, statdef.Def{Template: tp, Control: back}.Apply(text))
	require.Equal(t, map[int32]bool{0: true, 1: true, 2: false}, back.off)

	// Past MaxLine plus the longest name as Write writes it, a line is refused.
	limit := statdef.MaxLine + len(strconv.Quote(bin))
	line := func(n int) string { return "name=rtt on=0" + strings.Repeat(" ", n-len("name=rtt on=0")) }
	require.ErrorIs(t, statdef.Def{Template: tp, Control: back}.Apply(line(limit+1)), voi.ErrInvalid)
	require.Equal(t, map[int32]bool{0: true, 1: true, 2: false}, back.off)
	require.NoError(t, statdef.Def{Template: tp, Control: back}.Apply(line(limit)))
	require.Equal(t, map[int32]bool{0: true, 1: true, 2: true}, back.off)
}

// FuzzWriteApply: whatever the VOIs' names and settings, the definition
// Write prints applies to fresh settings and gives the same settings back
// (each name read back names its VOI), however long the names.
func FuzzWriteApply(f *testing.F) {
	for _, s := range [][2]string{{"rtt", "bytes"}, {"my voi", "x"}, {`"q"`, "a=b"}, {"a\tb", "\xff"}, {"", " "}, {"name=x on=1", `x"`},
		{strings.Repeat("n", statdef.MaxLine), "x"}, {strings.Repeat("\x01", statdef.MaxLine/3), strings.Repeat("y", statdef.MaxLine-10)}} {
		f.Add(s[0], s[1], uint8(1))
	}
	f.Fuzz(func(t *testing.T, a, b string, off uint8) {
		if a == b {
			return // a name means the first VOI of that name
		}
		tp, err := namesTpl(t, a, b)
		if err != nil {
			return
		}
		sw := &idSwitch{off: map[int32]bool{0: off&1 != 0, 1: off&2 != 0}, allOff: off&4 != 0}
		var sb strings.Builder
		require.NoError(t, statdef.Def{Template: tp, Control: sw}.Write(&sb))
		text := sb.String()
		back := &idSwitch{off: map[int32]bool{}}
		require.NoError(t, statdef.Def{Template: tp, Control: back}.Apply(text), "%q", text)
		require.Equal(t, sw.allOff, back.allOff, "%q", text)
		for id := int32(0); id < 2; id++ {
			require.Equal(t, sw.off[id], back.off[id], "VOI %d in %q", id, text)
		}
	})
}

// resetLog notes the VOIs reset, in order (statdef.Resetter).
type resetLog []int32

func (r *resetLog) ResetVOI(id int32) error { *r = append(*r, id); return nil }

// A definition as long as Handler takes, every line naming a VOI of a
// template of a thousand, reads the template's VOIs once: Apply copied
// them all (tpl.Template.VOIs) to look up each line's name, 300 MB and
// half a second of CPU for one 64 KiB request.
func TestApplyManyLinesReadTheTemplateOnce(t *testing.T) {
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("v%d", i)
	}
	tp, err := namesTpl(t, names...)
	require.NoError(t, err)
	line := "name=v999 on=0\n"
	text := strings.Repeat(line, statdef.MaxBody/len(line))
	sw := &idSwitch{off: map[int32]bool{}}
	d := statdef.Def{Template: tp, Control: sw}
	n := alloctest.Bytes(1, func() { require.NoError(t, d.Apply(text)) })
	require.Less(t, n, uint64(2<<20), "bytes allocated by one Apply")
	require.Equal(t, map[int32]bool{999: true}, sw.off)
}

// Each VOI is reset once per Apply, at the first line that resets it,
// however many lines do: a definition of data=reset lines made the
// Resetter reset every VOI once a line (a 64 KiB one, 6,000 times each;
// the HTTP collector writes every reset VOI's name to its log record).
func TestApplyResetsEachVOIOnce(t *testing.T) {
	d, _ := setup(t)
	var r resetLog
	d.Reset = &r
	require.NoError(t, d.Apply("name=rtt data=reset\ndata=reset\nname=bytes data=reset\n"+strings.Repeat("data=reset\n", 100)))
	require.Equal(t, resetLog{2, 0}, r)
	r = nil
	require.NoError(t, d.Apply("name=rtt data=reset on=0\nname=rtt data=reset on=1"))
	require.Equal(t, resetLog{2}, r)
}

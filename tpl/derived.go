package tpl

// derivedValue is what a package above tpl derived from one version of a
// template's bytes (package blob's update plan).
type derivedValue struct{ v any }

// AppendDerived appends the template's bytes to dst and returns them with
// the template's hash and the value mk derives from exactly those bytes.
// The value is made on first use and kept with the template until a VOI is
// added, so every blob made from one version of a template can share it,
// and it goes away with the template. Package blob keeps its update plan
// here; mk must not modify b nor call methods of t, and must return the same value for
// the same bytes (concurrent first uses may each make one; one is kept).
func (t *Template) AppendDerived(dst []byte, mk func(b []byte) any) ([]byte, uint32, any) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	d := t.derived.Load()
	if d == nil {
		d = &derivedValue{v: mk(t.sb)}
		if !t.derived.CompareAndSwap(nil, d) {
			d = t.derived.Load() // another reader made it first
		}
	}
	return append(dst, t.sb...), t.hash, d.v
}

package blob

import (
	"github.com/statsblob/statsblob/bsdrand"
)

// A copied blob (Clone, Snapshot) needs a Blob, its bytes and an Env with
// a random source of its own. The three small pieces share one allocation;
// the bytes get a pointer-free one of their own, which the collector
// neither zeroes (all of it is copied over) nor scans.
type clonedBlob struct {
	bl  Blob
	env Env
	rnd bsdrand.Source
}

// newBlob returns a Blob holding a copy of src (len(src) == cursz) with
// plan pl and a copy of env with a copy of its random source (see
// cloneEnv).
func newBlob(src []byte, pl *plan, env *Env) *Blob {
	b := append([]byte(nil), src...) // no zeroing of what is copied over
	if env == nil {
		return &Blob{b: b, plan: pl}
	}
	o := &clonedBlob{bl: Blob{b: b, plan: pl}, env: *env}
	o.bl.env = &o.env
	if env.Rand != nil {
		o.rnd = *env.Rand
		o.env.Rand = &o.rnd
	}
	return &o.bl
}

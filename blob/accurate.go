package blob

import (
	"github.com/statsblob/statsblob/internal/trusted"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tpl"
)

// T-digest clustering modes: see the package documentation.

// digestModes returns which of the plan's t-digests template t declares
// accurate (nil when none is), worked out once per plan.
func digestModes(t *tpl.Template, pl *plan) []bool {
	if pl.ndigests == 0 {
		return nil
	}
	if m := pl.modes.Load(); m != nil {
		return *m
	}
	var acc []bool
	defs := t.VOIs()
	for id, sp := range pl.digestStats() {
		for _, d := range defs {
			if int(d.ID) != id {
				continue
			}
			for _, s := range d.Stats {
				if s.TDigest.Mode == tdigest.Accurate && s.TDigest.DType == sp.dtype {
					if acc == nil {
						acc = make([]bool, pl.ndigests)
					}
					acc[sp.digest] = true
				}
			}
		}
	}
	pl.modes.CompareAndSwap(nil, &acc)
	return *pl.modes.Load()
}

// setModes makes the t-digests marked in acc (by statPlan.digest) update
// in the accurate mode.
func (bl *Blob) setModes(acc []bool) {
	if acc == nil {
		return
	}
	if bl.digests == nil {
		bl.digests = make([]trusted.TDigestCache, bl.plan.ndigests)
	}
	for i, a := range acc {
		bl.digests[i].Accurate = a
	}
}

// copyModes gives bl the modes of from, a blob of the same plan.
func (bl *Blob) copyModes(from *Blob) {
	if from.plan != bl.plan {
		return
	}
	for i := range from.digests {
		if from.digests[i].Accurate {
			if bl.digests == nil {
				bl.digests = make([]trusted.TDigestCache, bl.plan.ndigests)
			}
			bl.digests[i].Accurate = true
		}
	}
}

// UseModes makes the blob's t-digests update in the clustering modes
// template t declares (tpl.TDigestSpec.Mode), after checking, as
// CheckTemplate does, that the blob is one t makes (the error is
// CheckTemplate's; the blob is then unchanged). It is for blobs made from
// bytes, which update in the C's mode; New and Init take the modes from
// their template.
func (bl *Blob) UseModes(t *tpl.Template) error {
	if err := bl.CheckTemplate(t); err != nil {
		return err
	}
	bl.settle()
	_, _, pl := templateBytes(t)
	acc := digestModes(t, pl)
	// The blob's plan has the template's layout (CheckTemplate), so its
	// t-digests are numbered alike.
	for i := range bl.digests {
		bl.digests[i].Invalidate()
		bl.digests[i].Accurate = false
	}
	bl.setModes(acc)
	return nil
}

// settle writes the samples accurate-mode t-digests buffer into the bytes.
func (bl *Blob) settle() {
	if !bl.pending {
		return
	}
	bl.pending = false
	for _, sp := range bl.plan.digestStats() {
		c := &bl.digests[sp.digest]
		if c.Accurate {
			trusted.TDigestFlush(c, bl.b[sp.dataOff:int(sp.dataOff)+int(sp.dsz)], sp.dtype)
		}
	}
}

// Package sample decides which template, if any, a flow is sampled with:
// FreeBSD's dice roll (stats_tpl_sample_rollthedice) and a subsystem's
// table of per-template sample rates (what a subsystem such as TCP keeps
// behind its sysctl, stats_tpl_sample_rates, in the C).
//
// # The roll
//
// Roll, Pick, Percent and RollPercent are the C's roll, step by step and
// bit for bit: a seeded roll depends only on the seed bytes, an unseeded
// one draws once from a *bsdrand.Source (random(3)). A Table adds what a
// subsystem needs on its hot path: lock-free seeded rolls, and RollRandom,
// an unseeded roll that is safe for concurrent use but draws from
// math/rand/v2 instead of random(3) (same distribution, not the C's
// sequence).
//
// # The rates table
//
// A Table holds the current []Rate behind an atomic pointer: readers load
// an immutable snapshot and never block; Set and Swap build a complete new
// list and publish it in one store. The C's callback protocol maps onto it
// as follows:
//
//   - TPL_SR_UNLOCKED_GET (how many rates): len(t.Rates()).
//   - TPL_SR_RLOCKED_GET / TPL_SR_RUNLOCK (read the list under the
//     subsystem's read lock): t.Rates(), no lock; the snapshot stays valid
//     and unchanged however long it is held.
//   - TPL_SR_PUT (install a parsed list, hand back the old one): t.Set or
//     t.Swap; Swap returns the old list, which the garbage collector frees.
//
// Table.String prints the list as reading the sysctl does; Table.Set parses
// it as writing the sysctl does (see Parse for the accepted text, the C
// quirks kept and the one deliberate difference).
package sample

// Rate is one entry of a rates list: a template slot id and the percentage
// of flows to sample with it (struct stats_tpl_sample_rate). A Rate is a
// plain value.
type Rate struct {
	TplID int32  // slot id in the table's registry (tpl.Template.ID)
	Pct   uint32 // 0..100; entries with 0 are never chosen
}

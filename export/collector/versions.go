package collector

import (
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/tpl"
)

// Versions of one template name live side by side (templates.go), each
// with its own aggregates. Where aggregates of several versions share a
// label set in a window, each but the newest known version's carries one
// more label, VersionLabel, its template hash (the rule of
// export/internal/versions, which the NATS JetStream collector follows
// too). The newest version of a name is the last of it in the order the
// server came to know its templates (Config.Templates, then
// Config.MoreTemplates, then uploads and AddTemplates), not the one
// whose posts came last.

// VersionLabel is export.VersionLabel: the label that tells apart the
// aggregates of an older version of a template that share a label set
// with another version's: the older version's template hash (the
// senders', as tpl.Template.Hash), eight hexadecimal digits. Posts and
// tokens may not carry it.
const VersionLabel = export.VersionLabel

// withVersions adds VersionLabel to the aggregates ns of versions other
// than the newest known of their name that share their label set with
// another version's.
func (s *Server) withVersions(ns []export.Named) []export.Named {
	return s.tpls.idx.Load().versions.Label(ns)
}

// postedHash returns the hash of the template n's samples were posted as:
// n.Posted's, else that of the known template whose wide form is
// n.Template (the first such: two versions can share a wide form), else
// n.Template's own.
func (s *Server) postedHash(n export.Named) uint32 {
	return s.tpls.idx.Load().versions.PostedHash(n)
}

// newest returns the newest known version of template name, or nil.
func (s *Server) newest(name string) *tpl.Template {
	return s.tpls.idx.Load().versions.Newest(name)
}

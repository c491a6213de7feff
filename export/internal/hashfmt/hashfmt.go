// Package hashfmt writes a template hash for people, one way in every
// message of the collectors (HTTP and NATS JetStream) and the exports:
// decimal, as a templates file ("hash": 2503678372) and "statsblob
// template check" give it, then in parentheses the eight hexadecimal
// digits of export.VersionLabel's value (statsblob_template_hash="953b19a4"),
// so that either finds the message with grep.
package hashfmt

import "fmt"

// String returns h as "2503678372 (953b19a4)": the hexadecimal part is
// Hex's.
func String(h uint32) string { return fmt.Sprintf("%d (%s)", h, Hex(h)) }

// Hex returns h as eight lowercase hexadecimal digits ("953b19a4"): the
// value of export.VersionLabel that internal/versions writes and a
// collector's query matches.
func Hex(h uint32) string { return fmt.Sprintf("%08x", h) }

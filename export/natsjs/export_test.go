package natsjs

import "github.com/nats-io/nats.go/jetstream"

// ConsumerConfig is partition p's durable consumer, for tests that play
// an owner holding messages.
func (s Setup) ConsumerConfig(p int) jetstream.ConsumerConfig {
	return s.withDefaults().consumerConfig(p)
}

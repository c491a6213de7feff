package natsjs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/statsblob/statsblob/voi"
)

// Setup is what the stream of a fleet is made of. The zero value of each
// field is its default.
type Setup struct {
	Stream     string        // the stream's name; "" is "STATSBLOB"
	Prefix     string        // subject prefix; "" is DefaultPrefix
	Partitions int           // 0 is DefaultPartitions
	Replicas   int           // stream and bucket replicas; 0 is 1 (3 for a 3-node cluster)
	MaxAge     time.Duration // how long the stream keeps a message; 0 is 24 hours (see the README: at least the longest outage of the collectors)
	Duplicates time.Duration // the de-duplication window; 0 is 10 minutes (at least the shippers' longest retry)
	LeaseTTL   time.Duration // how long a collector's partitions outlive it; 0 is 10 seconds, else at least MinLeaseTTL
	MaxState   int32         // the largest partition state in bytes; 0 is 8 MiB (the server's max_payload must take it: 1 MiB on a server without a configuration file)
}

// MinLeaseTTL is the shortest Setup.LeaseTTL: a consumer renews its
// leases every quarter of it, and a partition's fetches and checkpoints
// must fit in it (the server's fetch waits up to a second).
const MinLeaseTTL = time.Second

// check refuses the settings no consumer can work with. Errors wrap
// voi.ErrInvalid.
func (s Setup) check() error {
	if s.LeaseTTL > 0 && s.LeaseTTL < MinLeaseTTL {
		return fmt.Errorf("natsjs: lease %v shorter than %v: %w", s.LeaseTTL, MinLeaseTTL, voi.ErrInvalid)
	}
	return nil
}

func (s Setup) withDefaults() Setup {
	if s.Stream == "" {
		s.Stream = "STATSBLOB"
	}
	if s.Prefix == "" {
		s.Prefix = DefaultPrefix
	}
	if s.Partitions <= 0 {
		s.Partitions = DefaultPartitions
	}
	if s.Replicas <= 0 {
		s.Replicas = 1
	}
	if s.MaxAge <= 0 {
		s.MaxAge = 24 * time.Hour
	}
	if s.Duplicates <= 0 {
		s.Duplicates = 10 * time.Minute
	}
	if s.LeaseTTL <= 0 {
		s.LeaseTTL = 10 * time.Second
	}
	if s.MaxState <= 0 {
		s.MaxState = 8 << 20
	}
	return s
}

// The buckets' names, derived from the stream's.
func (s Setup) ownersBucket() string  { return s.Stream + "_owners" }
func (s Setup) membersBucket() string { return s.Stream + "_members" }
func (s Setup) stateBucket() string   { return s.Stream + "_state" }
func consumerName(p int) string       { return fmt.Sprintf("p%d", p) }
func partitionKey(p int) string       { return fmt.Sprintf("p%d", p) }

// Ensure creates the stream and its buckets, or updates them to s;
// collectors call it at start, so any of them can be first. An existing
// stream keeps the settings s has no field for (MaxBytes, MaxMsgs, ...). The
// partitions' consumers are made by their owners (see Consumer). A
// LeaseTTL below MinLeaseTTL is an error wrapping voi.ErrInvalid.
func (s Setup) Ensure(ctx context.Context, js jetstream.JetStream) error {
	if err := s.check(); err != nil {
		return err
	}
	s = s.withDefaults()
	// An existing stream keeps the settings Setup has no field for
	// (MaxBytes, MaxMsgs, ...: an operator's sizing); only Setup's are
	// set, so a collector's start does not undo them.
	cfg := jetstream.StreamConfig{Name: s.Stream}
	if st, err := js.Stream(ctx, s.Stream); err == nil {
		cfg = st.CachedInfo().Config
	} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("natsjs: stream %s: %w", s.Stream, err)
	}
	cfg.Subjects = []string{s.Prefix + ".>"}
	cfg.Storage = jetstream.FileStorage
	cfg.Replicas = s.Replicas
	cfg.MaxAge = s.MaxAge
	cfg.Duplicates = s.Duplicates
	cfg.Retention = jetstream.LimitsPolicy
	if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("natsjs: stream %s: %w", s.Stream, err)
	}
	for _, kv := range []jetstream.KeyValueConfig{
		{Bucket: s.ownersBucket(), TTL: s.LeaseTTL, Replicas: s.Replicas, Storage: jetstream.FileStorage},
		{Bucket: s.membersBucket(), TTL: s.LeaseTTL, Replicas: s.Replicas, Storage: jetstream.FileStorage},
		{Bucket: s.stateBucket(), MaxValueSize: s.MaxState, Replicas: s.Replicas, Storage: jetstream.FileStorage},
	} {
		if _, err := js.CreateOrUpdateKeyValue(ctx, kv); err != nil {
			return fmt.Errorf("natsjs: bucket %s: %w", kv.Bucket, err)
		}
	}
	return nil
}

// consumerConfig is partition p's durable consumer: every message of the
// partition, each acknowledged on its own once a stored state holds it.
func (s Setup) consumerConfig(p int) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       consumerName(p),
		FilterSubject: fmt.Sprintf("%s.%d.>", s.Prefix, p),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       s.LeaseTTL,
		MaxAckPending: 1 << 20,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		Replicas:      s.Replicas,
	}
}

var errLost = errors.New("natsjs: partition lost to another collector")

package otelexport

import (
	"context"
	"crypto/rand"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
)

// ServiceName is the service.name of Resource unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES say otherwise.
const ServiceName = "statsblob-collector"

// Resource returns the resource of a statsblob collector's exports, as
// OpenTelemetry users expect one: service.name (ServiceName),
// service.instance.id (a random UUID per call, one per collector process),
// host.name, the telemetry.sdk attributes, then attrs, then what the
// environment sets (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES), later ones
// winning. Detectors that fail leave their attributes out; the error is
// returned beside the resource, which is never nil.
func Resource(ctx context.Context, attrs ...attribute.KeyValue) (*resource.Resource, error) {
	base := []attribute.KeyValue{
		attribute.String("service.name", ServiceName),
		attribute.String("service.instance.id", uuid4()),
	}
	r, err := resource.New(ctx,
		resource.WithAttributes(base...),
		resource.WithHost(),
		resource.WithTelemetrySDK(),
		resource.WithAttributes(attrs...),
		resource.WithFromEnv())
	if r == nil {
		r = resource.NewSchemaless(append(base, attrs...)...)
	}
	return r, err
}

// uuid4 returns a random (version 4) UUID.
func uuid4() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

package otelexport_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/statsblob/statsblob/export/otelexport"
)

// The collector's resource: its service, a random instance id per call,
// the host, and what the environment says last.
func TestResource(t *testing.T) {
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=prod,service.namespace=stats")
	t.Setenv("OTEL_SERVICE_NAME", "")
	r, err := otelexport.Resource(context.Background(), attribute.String("collector", "c1"))
	require.NoError(t, err)
	get := func(k string) string {
		v, ok := r.Set().Value(attribute.Key(k))
		require.True(t, ok, k)
		return v.AsString()
	}
	require.Equal(t, otelexport.ServiceName, get("service.name"))
	require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`), get("service.instance.id"))
	require.NotEmpty(t, get("host.name"))
	require.Equal(t, "go", get("telemetry.sdk.language"))
	require.Equal(t, "c1", get("collector"))
	require.Equal(t, "prod", get("deployment.environment.name"))
	require.Equal(t, "stats", get("service.namespace"))
	r2, err := otelexport.Resource(context.Background())
	require.NoError(t, err)
	id2, _ := r2.Set().Value("service.instance.id")
	require.NotEqual(t, get("service.instance.id"), id2.AsString())

	t.Setenv("OTEL_SERVICE_NAME", "edge-collector")
	r, err = otelexport.Resource(context.Background())
	require.NoError(t, err)
	require.Equal(t, "edge-collector", get("service.name"))
}

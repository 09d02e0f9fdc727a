package controller

import (
	"context"
	"time"

	"k8s.io/utils/clock"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// controllerKey carries, in a context, the name of the controller calling
// the cloud provider (the metrics' controller label, as upstream's).
type controllerKey struct{}

// withController names the controller that calls the cloud with ctx.
func withController(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, controllerKey{}, name)
}

func controllerOf(ctx context.Context) string {
	if name, ok := ctx.Value(controllerKey{}).(string); ok {
		return name
	}
	return ""
}

// metered is a cloud provider whose every call is timed into
// karpenter_cloudprovider_duration_seconds and whose errors are counted in
// karpenter_cloudprovider_errors_total, as upstream's metrics decorator
// does. It is as safe for concurrent use as the provider it wraps.
type metered struct {
	cloud CloudProvider
	clk   clock.PassiveClock
}

var _ CloudProvider = metered{}

func (m metered) observe(ctx context.Context, method string, start time.Time, err error) {
	controller, provider := controllerOf(ctx), m.cloud.Name()
	cloudProviderDuration.WithLabelValues(controller, method, provider).Observe(m.clk.Since(start).Seconds())
	if err != nil {
		cloudProviderErrors.WithLabelValues(controller, method, provider, errorKind(err)).Inc()
	}
}

func (m metered) Create(ctx context.Context, nc *v1.NodeClaim) (*v1.NodeClaim, error) {
	start := m.clk.Now()
	out, err := m.cloud.Create(ctx, nc)
	m.observe(ctx, "Create", start, err)
	return out, err
}

func (m metered) Delete(ctx context.Context, nc *v1.NodeClaim) error {
	start := m.clk.Now()
	err := m.cloud.Delete(ctx, nc)
	m.observe(ctx, "Delete", start, err)
	return err
}

func (m metered) Get(ctx context.Context, providerID string) (*v1.NodeClaim, error) {
	start := m.clk.Now()
	out, err := m.cloud.Get(ctx, providerID)
	m.observe(ctx, "Get", start, err)
	return out, err
}

func (m metered) List(ctx context.Context) ([]*v1.NodeClaim, error) {
	start := m.clk.Now()
	out, err := m.cloud.List(ctx)
	m.observe(ctx, "List", start, err)
	return out, err
}

func (m metered) GetInstanceTypes(ctx context.Context, np *v1.NodePool) ([]*cloudprovider.InstanceType, error) {
	start := m.clk.Now()
	out, err := m.cloud.GetInstanceTypes(ctx, np)
	m.observe(ctx, "GetInstanceTypes", start, err)
	return out, err
}

func (m metered) IsDrifted(ctx context.Context, nc *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	start := m.clk.Now()
	out, err := m.cloud.IsDrifted(ctx, nc)
	m.observe(ctx, "IsDrifted", start, err)
	return out, err
}

func (m metered) RepairPolicies() []cloudprovider.RepairPolicy { return m.cloud.RepairPolicies() }
func (m metered) Name() string                                 { return m.cloud.Name() }

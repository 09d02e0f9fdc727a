package controller

import (
	"context"
	"testing"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/aws"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/kwok"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/sim"
)

// finalizerOnly can finalize NodeClasses but not resolve them.
type finalizerOnly struct{ stubCloud }

func (*finalizerOnly) FinalizeNodeClass(context.Context, *awsv1.EC2NodeClass) error { return nil }

// embedded is a provider wrapping another by embedding (as a test's
// throttled kwok provider does): it has what the embedded one has.
type embedded struct{ *kwok.Provider }

// Each provider's capabilities, as the controller finds them: what runs
// for it (the NodeClass reconciler, the interruption loop, its own loops)
// follows from these.
func TestDiscoverCapabilities(t *testing.T) {
	type has struct{ pools, offerings, classes, finalizer, interruptions, overlays, runner bool }
	for _, tc := range []struct {
		name string
		p    cloudprovider.CloudProvider
		want has
	}{
		{"none", &stubCloud{}, has{}},
		{"kwok", (*kwok.Provider)(nil), has{pools: true, offerings: true, interruptions: true}},
		{"kwok embedded", embedded{}, has{pools: true, offerings: true, interruptions: true}},
		{"sim", (*sim.Provider)(nil), has{pools: true, offerings: true}},
		{"aws", (*aws.Provider)(nil), has{offerings: true, classes: true, finalizer: true, interruptions: true, overlays: true, runner: true}},
		// A finalizer that is no resolver is not one: only a resolver's
		// NodeClasses are reconciled.
		{"finalizer without resolver", &finalizerOnly{}, has{}},
	} {
		c := DiscoverCapabilities(tc.p)
		got := has{c.NodePools != nil, c.Offerings != nil, c.NodeClasses != nil, c.NodeClassFinalizer != nil, c.Interruptions != nil,
			c.Overlays != nil, c.Runner != nil}
		if got != tc.want {
			t.Errorf("%s: capabilities %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

package controller

import (
	"context"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/overlay"
)

// A cloud provider must be a CloudProvider; beyond that it may have any of
// the optional capabilities below. The controller finds them once, in
// DiscoverCapabilities, and hands each part only the one it uses: no other
// code asks the provider what it is.

// NodePoolAware is a provider told the NodePools whenever they change,
// before it is asked for their instance types (kwok's and the simulated
// EC2's offerings follow the pools' requirements).
type NodePoolAware interface {
	SetNodePools([]*v1.NodePool) error
}

// VersionedOfferings is a provider whose offerings' availability has a
// version that changes when it learns something (an insufficient-capacity
// error, a reclaimed spot offering): the instance types are asked for again
// when it moves, so the next decision plans around it.
type VersionedOfferings interface {
	Version() int
}

// NodeClassResolver is a cloud provider whose EC2NodeClasses resolve to
// cloud resources (the AWS provider's subnets, security groups, AMIs and
// instance profile). The controller writes what it resolves as the
// NodeClass's status, with its Ready condition, as upstream's nodeclass
// controller does.
type NodeClassResolver interface {
	ResolveNodeClass(ctx context.Context, nc *awsv1.EC2NodeClass) (awsv1.EC2NodeClassStatus, error)
}

// NodeClassFinalizer is a resolver that also removes what it made for a
// NodeClass being deleted (the AWS provider's launch templates and
// instance profile).
type NodeClassFinalizer interface {
	FinalizeNodeClass(ctx context.Context, nc *awsv1.EC2NodeClass) error
}

// OverlayAware is a provider that launches by the overlaid prices (the
// AWS provider: a prioritized fleet, as upstream's): it is told every
// NodeOverlay result the Store's instance types were made with.
type OverlayAware interface {
	SetNodeOverlays(*overlay.Result)
}

// Runner is a cloud provider with loops of its own (the AWS provider's
// price refreshes and interruption queue), run while the controller leads.
type Runner interface {
	Run(ctx context.Context) error
}

// Capabilities are the optional capabilities a provider has; a nil field
// is one it has not.
type Capabilities struct {
	// NodePools: told the NodePools on every refresh of the offerings.
	NodePools NodePoolAware
	// Offerings: the instance types are refreshed when their version moves.
	Offerings VersionedOfferings
	// NodeClasses: EC2NodeClasses are resolved into their status (the
	// nodeclass.status reconciler runs, and the sync gate waits for the
	// EC2NodeClass informer).
	NodeClasses NodeClassResolver
	// NodeClassFinalizer: a deleted EC2NodeClass's cloud resources are
	// removed before its finalizer goes. Only a NodeClassResolver's counts.
	NodeClassFinalizer NodeClassFinalizer
	// Interruptions: the cloud's interruption notices are handled (the
	// interruption loop runs).
	Interruptions cloudprovider.Interrupter
	// Overlays: told the NodeOverlay result (NodeOverlay feature gate).
	Overlays OverlayAware
	// Runner: the provider's own loops run with the controller's.
	Runner Runner
}

// DiscoverCapabilities finds p's optional capabilities (through embedding
// too: a provider that embeds another has what it has).
func DiscoverCapabilities(p cloudprovider.CloudProvider) Capabilities {
	var c Capabilities
	c.NodePools, _ = p.(NodePoolAware)
	c.Offerings, _ = p.(VersionedOfferings)
	c.NodeClasses, _ = p.(NodeClassResolver)
	if c.NodeClasses != nil {
		c.NodeClassFinalizer, _ = p.(NodeClassFinalizer)
	}
	c.Interruptions, _ = p.(cloudprovider.Interrupter)
	c.Overlays, _ = p.(OverlayAware)
	c.Runner, _ = p.(Runner)
	return c
}

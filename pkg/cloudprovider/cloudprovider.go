// Package cloudprovider is the seam between Joiner's decisions and a cloud:
// one small interface, and the instance types and offerings that decisions
// are made over. Below it: catalog (the EC2 facts) and sim (a simulated
// EC2 over them, which the simulator launches through).
package cloudprovider

import (
	"context"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// CloudProvider launches and removes the machines behind NodeClaims.
type CloudProvider interface {
	// Create launches an instance for the NodeClaim, choosing among the
	// instance types and offerings its requirements allow (cheapest first),
	// and returns the NodeClaim with status.providerID, capacity,
	// allocatable and the resolved labels (instance type, zone, capacity
	// type) set. It returns an InsufficientCapacityError when no allowed
	// offering could be launched.
	Create(ctx context.Context, nodeClaim *v1.NodeClaim) (*v1.NodeClaim, error)
	// Delete terminates the NodeClaim's instance. It returns a
	// NodeClaimNotFoundError once the instance is gone.
	Delete(ctx context.Context, nodeClaim *v1.NodeClaim) error
	// Get returns the NodeClaim for a provider ID, or NodeClaimNotFoundError.
	Get(ctx context.Context, providerID string) (*v1.NodeClaim, error)
	// List returns a NodeClaim for every instance the provider runs.
	List(ctx context.Context) ([]*v1.NodeClaim, error)
	// GetInstanceTypes returns the instance types a NodePool may launch,
	// with their offerings' current prices and availability.
	GetInstanceTypes(ctx context.Context, nodePool *v1.NodePool) ([]*InstanceType, error)
	// IsDrifted reports why the instance no longer matches its NodeClass
	// (a new image, other subnets, …), or "" when it does.
	IsDrifted(ctx context.Context, nodeClaim *v1.NodeClaim) (DriftReason, error)
	// RepairPolicies lists the node conditions after which an unhealthy
	// node is replaced.
	RepairPolicies() []RepairPolicy
	// Name identifies the provider in logs and metrics.
	Name() string
}

// Interruption is the cloud's notice that it takes an instance away soon
// (a spot interruption warning: two minutes on EC2).
type Interruption struct {
	ProviderID string
	Kind       InterruptionKind
}

// InterruptionKind says what the notice is.
type InterruptionKind string

// SpotInterruption: the cloud reclaims a spot instance.
const SpotInterruption InterruptionKind = "SpotInterruption"

// Interrupter is a cloud provider that sends interruption notices (the
// AWS provider reads them from its SQS queue). A provider marks a
// reclaimed spot offering unavailable itself, as the AWS provider does, so
// replacements go elsewhere; the controller deletes the instance's claim.
type Interrupter interface {
	Interruptions() <-chan Interruption
}

// DriftReason says why a NodeClaim drifted from its NodeClass; "" is none.
type DriftReason string

// RepairPolicy replaces a node whose condition has had a status for longer
// than the toleration.
type RepairPolicy struct {
	ConditionType      string
	ConditionStatus    string
	TolerationDuration string
}
